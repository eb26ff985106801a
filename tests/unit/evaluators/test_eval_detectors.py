"""The shared PII and secret detectors: what each kind accepts and rejects, redaction,
evasive spellings, false-positive guards, and linear time on adversarial input."""

import base64
import json

import pytest

from evalrunner.evaluators.detectors import (
    PII_KINDS,
    SECRET_KINDS,
    Finding,
    find_pii,
    find_secrets,
)
from tests.support.scaling import assert_linear, quarter

# Test secrets are assembled from parts so that no scanner mistakes this file for a leak.
GITHUB = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0" + "123456789_" + "abcdefghijklmnop" * 3
SLACK = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrstuv"
OPENAI = "sk-" + "abc123def456ghi789jkl012mno345pqr678stu901vwx"
OPENAI_PROJECT = "sk-proj-" + "abcDEF1234567890abcdefghijklmnopQRST_uvw-XYZ"
ANTHROPIC = "sk-ant-api03-" + "abcdefghijklmnop1234567890ABCDEF"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
PEM_BODY = base64.encodebytes(bytes(range(96))).decode()
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----"
CERTIFICATE = f"-----BEGIN CERTIFICATE-----\n{PEM_BODY}-----END CERTIFICATE-----"
# jwt.io's example token: {"alg":"HS256","typ":"JWT"}.{"sub":"1234567890",...}.signature
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


def b64url_json(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def kinds(findings):
    return [f.kind for f in findings]


def values(text, findings):
    return [text[f.start : f.end] for f in findings]


def only(find, text, kind):
    """The single finding of ``text``, asserting its kind."""
    found = find(text)
    assert kinds(found) == [kind], (text, found)
    return found[0]


# --- positives: every kind, with the exact span and a redaction that hides the value ----------

PII_POSITIVES = [
    ("card", "Visa on file: 4111111111111111.", "4111111111111111"),
    ("card", "card 4111 1111 1111 1111, exp 12/25", "4111 1111 1111 1111"),
    ("card", "card 4111-1111-1111-1111 on file", "4111-1111-1111-1111"),
    ("card", "Amex 378282246310005", "378282246310005"),
    ("card", "Mastercard 5555 5555 5555 4444", "5555 5555 5555 4444"),
    ("card", "new Mastercard range 2223003122003222", "2223003122003222"),
    ("card", "Discover 6011 1111 1111 1117", "6011 1111 1111 1117"),
    ("card", "JCB 3530111333300000", "3530111333300000"),
    ("card", "Diners 3056 930902 5904", "3056 930902 5904"),
    ("card", "13-digit Visa 4222222222222", "4222222222222"),
    ("ssn", "SSN 123-45-6789.", "123-45-6789"),
    ("ssn", "her social security number 536 22 1234", "536 22 1234"),
    ("ssn", "SSN: 536221234", "536221234"),
    ("email", "write to john.doe+hr@example.co.uk today", "john.doe+hr@example.co.uk"),
    ("phone", "call +1 (415) 555-2671", "+1 (415) 555-2671"),
    ("phone", "E.164: +14155552671.", "+14155552671"),
    ("phone", "office 415-555-2671", "415-555-2671"),
    ("phone", "office 415.555.2671", "415.555.2671"),
    ("phone", "toll free 1-800-555-0199", "1-800-555-0199"),
    ("phone", "London +44 20 7946 0958", "+44 20 7946 0958"),
    ("phone", "London +44 (0)20 7946 0958", "+44 (0)20 7946 0958"),
    ("phone", "national 020 7946 0958", "020 7946 0958"),
    ("phone", "Paris 01 23 45 67 89", "01 23 45 67 89"),
    ("iban", "IBAN DE89 3704 0044 0532 0130 00 please", "DE89 3704 0044 0532 0130 00"),
    ("iban", "pay GB82WEST12345698765432", "GB82WEST12345698765432"),
    ("iban", "FR1420041010050500013M02606 is the account", "FR1420041010050500013M02606"),
    ("iban", "NL91 ABNA 0417 1643 00.", "NL91 ABNA 0417 1643 00"),
    ("ipv4", "server 192.168.10.25 is down", "192.168.10.25"),
    ("ipv4", "ends a sentence 10.0.0.1.", "10.0.0.1"),
    ("ipv6", "host 2001:db8::8a2e:370:7334 answers", "2001:db8::8a2e:370:7334"),
    (
        "ipv6",
        "full 2001:0db8:85a3:0000:0000:8a2e:0370:7334",
        "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
    ),
    ("ipv6", "link-local fe80::1ff:fe23:4567:890a", "fe80::1ff:fe23:4567:890a"),
    ("ipv6", "mapped ::ffff:192.0.2.128 too", "::ffff:192.0.2.128"),
]

SECRET_POSITIVES = [
    ("private_key", f"here:\n{PRIVATE_KEY}\nkeep it safe", PRIVATE_KEY),
    ("certificate", f"cert:\n{CERTIFICATE}", CERTIFICATE),
    ("aws_access_key", f"access key id {AWS_ID}.", AWS_ID),
    ("aws_secret_key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("openai_key", f"OPENAI_API_KEY={OPENAI}", OPENAI),
    ("openai_key", f"key: {OPENAI_PROJECT} (project)", OPENAI_PROJECT),
    ("anthropic_key", f"use {ANTHROPIC}", ANTHROPIC),
    ("github_token", f"token {GITHUB}", GITHUB),
    ("github_token", f"fine-grained {GITHUB_PAT}", GITHUB_PAT),
    ("slack_token", f"bot token {SLACK}", SLACK),
    ("google_api_key", f"maps key {GOOGLE}", GOOGLE),
    ("jwt", f"Authorization: Bearer {JWT}", JWT),
    ("password", "login with password: hunter2\n", "password: hunter2"),
    ("password", "DB_PASSWORD=s3cr3t;", "PASSWORD=s3cr3t"),
    ("password", "pwd=Tr0ub4dor&3 then", "pwd=Tr0ub4dor&3"),
    ("password", "passwd: xyz", "passwd: xyz"),
    ("password", '{"password": "correct horse 42"}', 'password": "correct horse 42"'),
    ("password", "the password is `Winter2024!`", "password is `Winter2024!`"),
    (
        "connection_string",
        "DATABASE_URL=postgres://admin:S3cretPass@db.example.com:5432/app",
        "postgres://admin:S3cretPass@db.example.com:5432",
    ),
    ("product_key", "Windows key VK7JG-NPHTM-C97JM-9MPGT-3V66T.", "VK7JG-NPHTM-C97JM-9MPGT-3V66T"),
]


@pytest.mark.parametrize(("kind", "text", "value"), PII_POSITIVES)
def test_pii_positive(kind, text, value):
    f = only(find_pii, text, kind)
    assert text[f.start : f.end] == value
    assert value not in f.text_redacted
    assert find_secrets(text) == []


@pytest.mark.parametrize(("kind", "text", "value"), SECRET_POSITIVES)
def test_secret_positive(kind, text, value):
    f = only(find_secrets, text, kind)
    assert text[f.start : f.end] == value
    assert value not in f.text_redacted


def test_every_kind_has_a_positive_case():
    assert {k for k, _, _ in PII_POSITIVES} == set(PII_KINDS)
    assert {k for k, _, _ in SECRET_POSITIVES} == set(SECRET_KINDS)


def test_redacted_forms():
    assert only(find_pii, "4111 1111 1111 1111", "card").text_redacted == "4111 **** **** 1111"
    assert only(find_pii, "4111111111111111", "card").text_redacted == "4111 **** **** 1111"
    assert only(find_pii, "123-45-6789", "ssn").text_redacted == "***-**-6789"
    assert only(find_pii, "jane@example.com", "email").text_redacted == "j***@example.com"
    assert only(find_pii, "415-555-2671", "phone").text_redacted == "***-***-**71"
    iban = only(find_pii, "DE89370400440532013000", "iban").text_redacted
    assert iban.startswith("DE") and iban.replace(" ", "").endswith("3000")
    assert "3704" not in iban and "0532" not in iban
    assert only(find_pii, "192.168.10.25", "ipv4").text_redacted == "192.168.*.*"
    assert only(find_secrets, AWS_ID, "aws_access_key").text_redacted == "AKIA************MPLE"
    pem = only(find_secrets, PRIVATE_KEY, "private_key").text_redacted
    assert pem.startswith("-----BEGIN RSA PRIVATE KEY-----") and PEM_BODY[:20] not in pem
    conn = "postgres://admin:S3cretPass@db.example.com"
    assert "S3cretPass" not in only(find_secrets, conn, "connection_string").text_redacted


def test_no_secret_fragment_in_redaction():
    # Not the value, and not a piece of its middle either (known prefixes and a PEM label
    # are fine to show).
    for kind, text, value in SECRET_POSITIVES:
        (f,) = find_secrets(text)
        middle = value[len(value) // 2 - 4 : len(value) // 2 + 4]
        assert middle not in f.text_redacted, (kind, f.text_redacted)


def test_finding_is_a_plain_record_in_position_order():
    text = "mail a@b.io, call 415-555-2671, card 4111 1111 1111 1111"
    found = find_pii(text)
    assert kinds(found) == ["email", "phone", "card"]
    assert [f.start for f in found] == sorted(f.start for f in found)
    assert isinstance(found[0], Finding) and str(found[0]) == "email a***@b.io"


# --- negatives: what each validator rejects ----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "4111111111111112",  # Luhn fails
        "4111 1111 1111 1112",
        "1234567812345670",  # Luhn passes, no issuer starts with 1
        "7111111111111114",  # Luhn passes, no issuer starts with 7
        "3714496353984314",  # Amex prefix, Luhn passes, but 16 digits (Amex has 15)
        "411111111111",  # 12 digits
        "41111111111111111111",  # 20 digits: an id, not a card
        "x4111111111111111",  # part of a word
        "pi is 0.4111111111111111",  # decimals
    ],
)
def test_card_rejects(text):
    assert "card" not in kinds(find_pii(text))


@pytest.mark.parametrize(
    "ssn",
    ["000-12-3456", "666-12-3456", "900-12-3456", "999-12-3456", "123-00-4567", "123-45-0000"],
)
def test_ssn_invalid_ranges(ssn):
    assert find_pii(f"SSN {ssn}") == []


def test_bare_nine_digits_need_the_word_ssn_just_before():
    assert kinds(find_pii("SSN: 536221234")) == ["ssn"]
    assert find_pii("order 536221234 shipped") == []
    # the keyword belongs to the first number only
    assert len(find_pii("ssn: 536221234 and order 536221235")) == 1


def test_ssn_mixed_separators_are_not_an_ssn():
    assert find_pii("123-45 6789") == []


@pytest.mark.parametrize(
    "text",
    [
        "DE88 3704 0044 0532 0130 00",  # check digits wrong
        "DE89 3704 0044 0532 0130 01",  # body changed
        "DE89 3704 0044 0532 0130",  # too short for DE (22)
        "DE89370400440532013000X",  # glued to a longer token
        "ZZ89370400440532013000",  # no such country
    ],
)
def test_iban_rejects(text):
    assert "iban" not in kinds(find_pii(text))


@pytest.mark.parametrize(
    "text",
    [
        "256.1.1.1",  # octet > 255
        "192.168.1.300",
        "192.168.01.1",  # leading zero
        "1.2.3",  # three parts: a version
        "1.2.3.4.5",  # five parts
        "v1.2.3.4",
        "version 1.2.3.4",
        "release 10.4.2.1",
        "bind to 0.0.0.0",
        "localhost 127.0.0.1",
        "netmask 255.255.255.0",
    ],
)
def test_ipv4_rejects(text):
    assert "ipv4" not in kinds(find_pii(text))


@pytest.mark.parametrize(
    "text",
    [
        "loopback ::1",
        "at 12:30:45",
        "MAC 00:1A:2B:3C:4D:5E",
        "std::vector<int>",
        "2001:db8:::1",  # not an address
        "1:2:3:4:5:6:7:8:9",  # nine groups
    ],
)
def test_ipv6_rejects(text):
    assert "ipv6" not in kinds(find_pii(text))


def test_jwt_needs_a_json_header_with_alg():
    no_alg = f"{b64url_json({'typ': 'JWT'})}.{b64url_json({'sub': '1'})}.{'s' * 43}"
    assert find_secrets(no_alg) == []
    assert find_secrets("eyJhbGciOi.garbagegarbage.morerandomtextmore") == []
    assert find_secrets("see eyJfoo.bar.baz for details") == []
    unsigned = f"{b64url_json({'alg': 'none'})}.{b64url_json({'sub': '1'})}."
    assert kinds(find_secrets(unsigned)) == ["jwt"]
    short_sig = f"{b64url_json({'alg': 'HS256'})}.{b64url_json({'sub': '1'})}.abc"
    assert find_secrets(short_sig) == []


def test_product_key_needs_letters_and_digits():
    assert find_secrets("XXXXX-XXXXX-XXXXX-XXXXX-XXXXX") == []
    assert find_secrets("HELLO-WORLD-THISI-SJUST-WORDS") == []
    assert find_secrets("12345-67890-12345-67890-12345") == []
    assert find_secrets("vk7jg-nphtm-c97jm-9mpgt-3v66t") == []  # keys are upper case
    assert kinds(find_secrets("ABCDE-12345-FGHIJ-67890-KLMNO")) == ["product_key"]


def test_pem_public_key_and_request_are_not_secrets():
    body = PEM_BODY
    assert find_secrets(f"-----BEGIN PUBLIC KEY-----\n{body}-----END PUBLIC KEY-----") == []
    csr = f"-----BEGIN CERTIFICATE REQUEST-----\n{body}-----END CERTIFICATE REQUEST-----"
    assert find_secrets(csr) == []


def test_pem_truncated_private_key_still_leaks_but_a_bare_header_does_not():
    truncated = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY[:80]}"
    assert kinds(find_secrets(truncated)) == ["private_key"]
    assert find_secrets("the file starts with -----BEGIN RSA PRIVATE KEY-----") == []
    assert find_secrets(f"-----BEGIN CERTIFICATE-----\n{PEM_BODY}") == []  # no END


def test_aws_secret_needs_context_and_randomness():
    assert find_secrets(f"value {AWS_SECRET}") == []  # no "aws"/"secret" nearby
    assert find_secrets("aws secret " + "a" * 40) == []  # no mixed case, no digit
    assert find_secrets("secret sha " + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b") == []
    assert find_secrets(f"aws secret {AWS_SECRET}X") == []  # 41 characters


@pytest.mark.parametrize(
    "text",
    [
        "The password is required.",
        "Your password is incorrect",
        "Password: reset it in the portal.",
        "password: ********",
        "password=<your password>",
        "password: {{password}}",
        "DB_PASSWORD=${DB_PASSWORD}",
        "PWD=/home/user/project",
        "Password policy: at least 12 characters",
        "https://user:password@example.com/repo",  # documentation placeholder
        "postgres://admin:${DB_PASS}@db:5432",
        "we passed the test and the password manager is fine",
    ],
)
def test_password_placeholders_and_prose_are_not_secrets(text):
    assert find_secrets(text) == []


# --- false-positive guards: everyday numbers and identifiers -----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "It costs $1,234.56 or €1.234,56, about 1 000 000 yen.",
        "Dates: 2023-10-05, 05/10/2023, 01.02.2023, 01-02-2023 12 people came.",
        "In 2019 2020 and 2021 the budget grew by 12.5%.",
        "Upgrade to version 1.2.3 or v2.10.4-beta; Python 3.11.7.",
        "Order #1234567890 and invoice INV-2023-000123, ticket 4155552671.",
        "Request id 123e4567-e89b-12d3-a456-426614174000.",
        "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "git commit 3f2c1ab9d4e5f60718293a4b5c6d7e8f90a1b2c3",
        "Meet at 12:30:45, room 4.2, floor +3, score +12.5.",
        "image logo@2x.png and clone git@github.com:org/repo.git",
        "ISBN 978-3-16-148410-0 and ISSN 2049-3630",
        "Coordinates 48.8566, 2.3522; temperature -12.5 C.",
    ],
)
def test_everyday_text_is_neither_pii_nor_secret(text):
    assert find_pii(text) == [], find_pii(text)
    assert find_secrets(text) == [], find_secrets(text)


# --- evasive inputs and overlaps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("card 41 11 11 11 11 11 11 11 ok", "41 11 11 11 11 11 11 11"),
        ("card 4111-11111111-1111 ok", "4111-11111111-1111"),
        ("card 4111 1111-1111 1111 ok", "4111 1111-1111 1111"),
        ("ref 12 4111 1111 1111 1111 end", "4111 1111 1111 1111"),
        ("ID12 4111 1111 1111 1111", "4111 1111 1111 1111"),
        ("4111 1111 1111 1111 12/25", "4111 1111 1111 1111"),
    ],
)
def test_card_split_by_spaces_and_dashes(text, value):
    f = only(find_pii, text, "card")
    assert text[f.start : f.end] == value


def test_two_cards_in_one_run():
    text = "4111 1111 1111 1111 5555 5555 5555 4444"
    assert values(text, find_pii(text)) == ["4111 1111 1111 1111", "5555 5555 5555 4444"]


@pytest.mark.parametrize(
    "text",
    [
        "<jane.doe@example.com>",
        "(jane.doe@example.com)",
        '"jane.doe@example.com",',
        "mailto:jane.doe@example.com.",
        "[jane.doe@example.com];",
        "email:jane.doe@example.com!",
    ],
)
def test_email_in_punctuation(text):
    f = only(find_pii, text, "email")
    assert text[f.start : f.end] == "jane.doe@example.com"


def test_credentials_in_a_url_are_a_secret_not_an_email():
    text = "postgres://admin:S3cretPass@db.example.com:5432/app"
    assert find_pii(text) == []
    assert kinds(find_secrets(text)) == ["connection_string"]


def test_iban_digits_are_not_also_a_card_or_phone():
    assert kinds(find_pii("DE89 3704 0044 0532 0130 00")) == ["iban"]


# --- linear time -------------------------------------------------------------------------------

N = 100_000
ADVERSARIAL = {
    "digits": "1" * N,
    "digit groups": "4 " * (N // 2),
    "dashed digits": "4-" * (N // 2),
    "dotted digits": "1." * (N // 2),
    "colons": "a:" * (N // 2),
    "at signs": "a.a@a.a" * (N // 7),
    "long local part": "a" * N + "@",
    "domain labels": "a@" + "a." * (N // 2),
    "plus groups": "+1 " * (N // 3),
    "ssn bait": "ssn 123456789 " * (N // 14),
    "pem headers": "-----BEGIN PRIVATE KEY-----" * (N // 27),
    "pem body": "-----BEGIN RSA PRIVATE KEY-----" + "A-" * (N // 2),
    "jwt prefix": "eyJhbGciOi." * (N // 11),
    "password words": "password: " * (N // 10),
    "url bait": "x://a:" * (N // 6),
    "key bait": "A1B2C-" * (N // 6),
    "token bait": "sk-" + "a1" * (N // 2),
    "aws bait": "aws " + "Ab1/" * (N // 4),
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_adversarial_100k_characters_take_linear_time(name):
    """No regex backtracks and no pass is quadratic: the whole text costs about 4x the CPU
    time of its first quarter (tests/support/scaling.py; no wall-clock bound, which a loaded
    machine breaks and a fast one lets a quadratic scan pass)."""
    text = ADVERSARIAL[name]

    def scan(part: str) -> None:
        find_pii(part)
        find_secrets(part)

    assert_linear(scan, quarter(text), text)
