"""PII masking (evalrunner/privacy.py): each kind found and replaced by a typed placeholder,
look-alikes left alone, one numbering per case, markup and odd text survive."""

from __future__ import annotations

import json

import pytest

from evalrunner.errors import ConfigError
from evalrunner.privacy import (
    PiiKind,
    PiiMasker,
    PiiOptions,
    Pseudonyms,
    mask_case,
    mask_pii,
    mask_test_case,
    pii_options,
)
from evalrunner.suite.model import TestCase, Turn


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("write to John.Doe@Example.com today", "write to <EMAIL_1> today"),
        ("(a.b+tag@mail.example.co.uk)", "(<EMAIL_1>)"),
        ("call +1 415-555-0132 now", "call <PHONE_1> now"),
        ("call (212) 555-0199.", "call <PHONE_1>."),
        ("UK office 020 7946 0958", "UK office <PHONE_1>"),
        ("Berlin +49 30 901820", "Berlin <PHONE_1>"),
        ("card 4111 1111 1111 1111 ok", "card <CARD_1> ok"),
        ("card 5500-0000-0000-0004", "card <CARD_1>"),
        ("amex 378282246310005", "amex <CARD_1>"),
        ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN <IBAN_1> please"),
        ("IBAN GB82WEST12345698765432.", "IBAN <IBAN_1>."),
        ("from 192.168.1.20, fine", "from <IP_1>, fine"),
        ("v6 2001:db8::1 and ::1", "v6 <IP_1> and <IP_2>"),
        ("ssn 123-45-6789", "ssn <SSN_1>"),
    ],
)
def test_each_kind_is_masked(text: str, masked: str) -> None:
    assert mask_pii(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 fails Luhn",
        "order 12345678 shipped",
        "version 1.2.3.4.5 and 999.1.1.1",
        "at 12:30:45 on 2024-05-01",
        "IBAN DE00 3704 0044 0532 0130 00 has a bad check",
        "ssn 000-12-3456 is never issued",
        "an @ sign alone, user@localhost",
        "call 555-0100",
        "use std::vector and Note:: see a::b or dead::beef",
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert mask_pii(text) == text


def test_an_iban_followed_by_a_code_keeps_the_code() -> None:
    assert mask_pii("DE89 3704 0044 0532 0130 00 AB12") == "<IBAN_1> AB12"


def test_the_same_value_gets_the_same_placeholder_however_written() -> None:
    text = (
        "mail a@b.com or A@B.COM, phone +1 415 555 0132 or (415) 555-0132, "
        "card 4111111111111111 = 4111 1111 1111 1111, other c@d.org"
    )
    assert mask_pii(text) == (
        "mail <EMAIL_1> or <EMAIL_1>, phone <PHONE_1> or <PHONE_1>, "
        "card <CARD_1> = <CARD_1>, other <EMAIL_2>"
    )


def test_a_case_is_numbered_once_across_its_texts() -> None:
    masked = mask_case(
        "my mail is a@b.com and my phone +44 20 7946 0958",
        "we wrote to A@B.com and copied c@d.org",
        ["a@b.com is on file", "call 020 7946 0958"],
        [Turn(role="user", content="earlier: c@d.org")],
    )
    assert masked.question == "my mail is <EMAIL_1> and my phone <PHONE_1>"
    assert masked.answer == "we wrote to <EMAIL_1> and copied <EMAIL_2>"
    assert masked.contexts == ["<EMAIL_1> is on file", "call <PHONE_1>"]
    assert masked.turns[0].content == "earlier: <EMAIL_2>"
    assert masked.masked == {"EMAIL": 2, "PHONE": 1}
    # A second case starts its numbering again: placeholders never link two users.
    assert mask_case("c@d.org").question == "<EMAIL_1>"


def test_a_test_case_is_masked_everywhere_a_judge_or_report_reads() -> None:
    turn = TestCase(index=0, case_id="c-t1", question="I am a@b.com", answer="hi a@b.com")
    case = TestCase(
        index=0,
        case_id="c",
        question="reach me at a@b.com",
        answer="sent to a@b.com from 10.0.0.7",
        contexts=["ip 10.0.0.7"],
        expected_answer="candidate: a@b.com",
        expected_contexts=["a@b.com"],
        conversation=[Turn(role="assistant", content="card 4111 1111 1111 1111?")],
        turns=[turn],
    )
    masked = mask_test_case(case)
    dumped = json.dumps(masked.model_dump())
    assert "a@b.com" not in dumped
    assert "10.0.0.7" not in dumped
    assert "4111" not in dumped
    assert masked.question == "reach me at <EMAIL_1>"
    assert masked.answer == "sent to <EMAIL_1> from <IP_1>"
    assert masked.turns[0].answer == "hi <EMAIL_1>"
    assert masked.conversation[0].content == "card <CARD_1>?"
    assert masked.notes == ["PII masked: 1 CARD, 1 EMAIL, 1 IP"]
    assert case.question == "reach me at a@b.com"  # the original is not changed


def test_a_clean_case_gets_no_note() -> None:
    case = TestCase(index=0, case_id="c", question="what is the leave policy?", answer="20 days")
    assert mask_test_case(case) == case


def test_markup_around_pii_is_kept() -> None:
    html = '<a href="mailto:a@b.com">a@b.com</a><td>+1 415-555-0132</td>'
    assert mask_pii(html) == '<a href="mailto:<EMAIL_1>"><EMAIL_1></a><td><PHONE_1></td>'
    md = "**Email:** `a@b.com` | [call](tel:+14155550132)"
    assert mask_pii(md) == "**Email:** `<EMAIL_1>` | [call](tel:<PHONE_1>)"


def test_surrogates_controls_and_wide_text_do_not_break_masking() -> None:
    text = "\ud800a@b.com\x00 電話 +1 415-555-0132 😀 4111111111111111\udfff"
    assert mask_pii(text) == "\ud800<EMAIL_1>\x00 電話 <PHONE_1> 😀 <CARD_1>\udfff"
    assert mask_pii("") == ""


def test_options_choose_the_kinds_and_the_phone_regions() -> None:
    only_mail = PiiMasker(PiiOptions(kinds=(PiiKind.EMAIL,)))
    assert only_mail.mask("a@b.com 4111 1111 1111 1111") == "<EMAIL_1> 4111 1111 1111 1111"
    us_only = PiiMasker(PiiOptions(phone_regions=("US",)))
    # a UK number in national form is a UK number only where GB's formats are read
    assert us_only.mask("020 7946 0958") == "020 7946 0958"
    assert us_only.mask("+44 20 7946 0958") == "<PHONE_1>"


def test_bad_options_name_the_problem() -> None:
    with pytest.raises(ConfigError, match=r"phone_regions.*'XX'.*ISO 3166"):
        pii_options({"phone_regions": ["XX"]})
    with pytest.raises(ConfigError, match=r"kinds"):
        pii_options({"kinds": ["NAME"]})
    assert pii_options(None) == PiiOptions()


def test_a_shared_table_carries_numbering_between_calls() -> None:
    table = Pseudonyms()
    masker = PiiMasker()
    assert masker.mask("a@b.com", table) == "<EMAIL_1>"
    assert masker.mask("x@y.com then a@b.com", table) == "<EMAIL_2> then <EMAIL_1>"
    assert table.counts == {"EMAIL": 2}


def test_the_monitor_function_reads_its_masking_from_the_environment() -> None:
    from evalrunner.privacy import ENV_PII, masker_from_env

    assert masker_from_env({}) is not None  # on by default
    assert masker_from_env({ENV_PII: "off"}) is None
    only_mail = masker_from_env({ENV_PII: '{"kinds": ["EMAIL"]}'})
    assert only_mail is not None and only_mail.options.kinds == (PiiKind.EMAIL,)
    with pytest.raises(ConfigError, match="not JSON"):
        masker_from_env({ENV_PII: "{kinds"})


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        # an IPv4 address written as IPv6 used to leave its last three octets behind
        ("from ::ffff:10.0.0.1 today", "from <IP_1> today"),
        ("from 64:ff9b::192.0.2.33", "from <IP_1>"),
        # cards grouped with dots or the no-break spaces word processors put in
        ("card 4111.1111.1111.1111", "card <CARD_1>"),
        ("card 4111\u00a01111\u00a01111\u00a01111", "card <CARD_1>"),
        ("card ４１１１１１１１１１１１１１１１", "card <CARD_1>"),
        # phones with the dashes and spaces of typeset text
        ("call 415\u2011555\u20110132", "call <PHONE_1>"),
        ("call 415\u00a0555\u00a00132", "call <PHONE_1>"),
        # e-mail addresses as HTML and URLs encode them
        (
            '<a href="mailto:jo%40ex.com">jo&#64;ex.com</a>',
            '<a href="mailto:<EMAIL_1>"><EMAIL_1></a>',
        ),
        ("jo&#x40;ex.com or jo&commat;ex.com", "<EMAIL_1> or <EMAIL_1>"),
        # an address run into a key ("jo@ex.com-7") was not taken for one at all
        ("key jo@ex.com-7", "key <EMAIL_1>-7"),
    ],
)
def test_common_written_forms_do_not_slip_past(text: str, masked: str) -> None:
    assert mask_pii(text) == masked


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        # social security numbers written with spaces, still checked by python-stdnum
        ("ssn 123 45 6789.", "ssn <SSN_1>."),
        ("ssn 123-45-6789 = 123 45 6789", "ssn <SSN_1> = <SSN_1>"),
        ("room 5 123-45-6789", "room 5 <SSN_1>"),  # a number before a hyphenated one is fine
        # e-mail addresses spelled out to hide them, the same address as written plainly
        ("jo(at)ex.com or jo@ex.com", "<EMAIL_1> or <EMAIL_1>"),
        ("write jo [at] ex [dot] com today", "write <EMAIL_1> today"),
        ("Jo.Doe {AT} mail {DOT} example {DOT} org", "<EMAIL_1>"),
        ("jo <at> ex.co.uk", "<EMAIL_1>"),
        # addresses in other scripts (RFC 6531) and internationalised domains
        ("mail jörg@exämple.de now", "mail <EMAIL_1> now"),
        ("jörg@exämple.de = JÖRG@xn--exmple-cua.de", "<EMAIL_1> = <EMAIL_1>"),
        ("почта иван@пример.рф, ok", "почта <EMAIL_1>, ok"),
        ("a_b@ex.com", "<EMAIL_1>"),  # an underscore used to leave "a_" behind
        ("联系 jo@ex.com谢谢", "联系 <EMAIL_1>谢谢"),
        ("请发邮件到用户@例子.中国", "<EMAIL_1>"),  # no spaces: the words before go too
    ],
)
def test_the_leftover_written_forms_are_masked(text: str, masked: str) -> None:
    assert mask_pii(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "ssn 000 12 3456 is never issued, nor 666 12 3456",
        "meet me (at) 5pm [at] the office",
        "look at ex.com or jo at ex dot com",
        "python (at) version 3.11",
        "map [at] home (dot) 42",
        "user@localhost and jörg@exämple",
    ],
)
def test_the_leftover_look_alikes_are_left_alone(text: str) -> None:
    assert mask_pii(text) == text


@pytest.mark.parametrize(
    "text",
    ["codes 123 45 67890 and 1 123 45 6789", "mixed 123-45 6789 separators", "123 45 6789 0"],
)
def test_a_spaced_ssn_inside_a_longer_number_is_no_ssn(text: str) -> None:
    only_ssn = PiiMasker(PiiOptions(kinds=(PiiKind.SSN,)))
    assert only_ssn.mask(text) == text


def test_a_placeholder_typed_into_a_case_is_never_given_to_a_real_value() -> None:
    # A user (or an answer) writing "<EMAIL_1>" must not be read by the judge as the
    # address masked elsewhere in the case: masked values skip the numbers typed in it.
    from evalrunner.privacy import mask_case

    masked = mask_case("I am <EMAIL_1>, my real mail is jo@ex.com", "We wrote to <EMAIL_1>.")
    assert masked.question == "I am <EMAIL_1>, my real mail is <EMAIL_2>"
    assert masked.answer == "We wrote to <EMAIL_1>."
    assert masked.masked == {"EMAIL": 1}  # one value was masked
    typed_later = mask_case("mail jo@ex.com", "ask <EMAIL_1> or <PHONE_1>, not +1 415-555-0132")
    assert typed_later.question == "mail <EMAIL_2>"
    assert typed_later.answer == "ask <EMAIL_1> or <PHONE_1>, not <PHONE_2>"
    # masking what is already masked changes nothing (the worst list re-masks the suite's)
    assert mask_case(masked.question, masked.answer).question == masked.question


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("mail jo\u200b@ex.com now", "mail <EMAIL_1> now"),  # zero-width space
        ("mail jo@ex\u00ad.com", "mail <EMAIL_1>"),  # soft hyphen (text copied from a PDF)
        ("card 4111\u200b1111\u200b1111\u200b1111 ok", "card <CARD_1> ok"),
        ("call +1\u2060415\u2060555\u20600132", "call <PHONE_1>"),  # word joiner
        ("ssn 123-\u200b45-6789", "ssn <SSN_1>"),
        ("\ufeffjo@ex.com and jo\u200d@ex.com", "\ufeff<EMAIL_1> and <EMAIL_1>"),
    ],
)
def test_invisible_characters_inside_a_value_do_not_hide_it(text: str, masked: str) -> None:
    # Rendered, these characters show nothing: the judge and the report reader see the
    # whole address or number, so the finders must not stop at them.
    from evalrunner.privacy import mask_pii

    assert mask_pii(text) == masked
