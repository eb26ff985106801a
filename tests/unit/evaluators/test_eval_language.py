"""Language mismatch: real detection on short question/answer pairs, skips, options."""

import pytest
from pydantic import ValidationError

from evalrunner.evaluators import Sample, resolve
from evalrunner.evaluators.language import (
    LANGUAGE_NAMES,
    MAX_CHARS,
    LanguageMismatch,
    LanguageOptions,
    _base_identifier,
    _clean,
    _identifier,
    detect,
)

QUESTIONS = {
    "en": "How many days of annual leave do I get per year?",
    "de": "Wie viele Urlaubstage habe ich pro Jahr?",
    "fr": "Combien de jours de congés payés ai-je par an ?",
    "es": "¿Cuántos días de vacaciones tengo al año?",
    "pt": "Quantos dias de férias tenho por ano?",
}
ANSWERS = {
    "en": "Full-time employees get 25 days of annual leave per year.",
    "de": "Vollzeitbeschäftigte haben 25 Urlaubstage pro Jahr.",
    "fr": "Les salariés à temps plein ont droit à 25 jours de congés par an.",
    "es": "Los empleados a tiempo completo tienen 25 días de vacaciones al año.",
    "pt": "Os funcionários a tempo inteiro têm direito a 25 dias de férias por ano.",
}


def run(question, answer, **options):
    [result] = resolve("Language mismatch")({}, options).evaluate(
        Sample(question=question, answer=answer)
    )
    return result


@pytest.mark.parametrize("lang", sorted(QUESTIONS))
def test_detects_each_language(lang):
    for text in (QUESTIONS[lang], ANSWERS[lang]):
        found = detect(text)
        assert found.language == lang, (text, found)
        assert found.confidence >= 0.5


@pytest.mark.parametrize("lang", sorted(QUESTIONS))
def test_same_language_passes(lang):
    r = run(QUESTIONS[lang], ANSWERS[lang])
    assert (r.status, r.score, r.success) == ("scored", 0.0, True)
    name = LANGUAGE_NAMES[lang]
    assert r.reason.count(f"{name} ({lang}, confidence") == 2
    assert r.reason.endswith("same language")


@pytest.mark.parametrize(
    ("q", "a"), [("de", "en"), ("en", "fr"), ("fr", "es"), ("es", "pt"), ("pt", "es"), ("en", "de")]
)
def test_different_language_fails_and_names_both(q, a):
    r = run(QUESTIONS[q], ANSWERS[a])
    assert (r.status, r.score, r.success, r.threshold) == ("scored", 1.0, False, 0.5)
    assert f"question in {LANGUAGE_NAMES[q]} ({q}, confidence" in r.reason
    assert f"answer in {LANGUAGE_NAMES[a]} ({a}, confidence" in r.reason
    assert r.reason.endswith("languages differ")


def test_short_texts_are_skipped_not_guessed():
    r = run("Wie geht's?", ANSWERS["en"])
    assert r.status == "skipped" and r.score is None
    assert "question is too short" in r.reason and "at least 20" in r.reason
    r = run(QUESTIONS["de"], "Yes, 25 days.")
    assert r.status == "skipped" and "answer is too short" in r.reason
    # An empty answer is present (not missing) but has nothing to detect.
    r = run(QUESTIONS["de"], "")
    assert r.status == "skipped" and "0 letters" in r.reason
    # The letter floor is an option.
    assert run("Wie geht's?", ANSWERS["en"], min_letters=5).score == 1.0


def test_low_confidence_is_skipped_with_the_guess():
    # An ambiguous Portuguese/Spanish question: best guess below the default floor.
    question = "A empresa paga o transporte público?"
    found = detect(question)
    assert found.confidence < 0.5
    r = run(question, ANSWERS["en"])
    assert r.status == "skipped"
    assert "language is uncertain" in r.reason and "min_confidence 0.50" in r.reason
    assert run(question, ANSWERS["en"], min_confidence=0.3).score == 1.0


def test_no_linguistic_content_is_skipped():
    hex_dump = "0x1f 0x2e 0x3d 0xff 0xab 0xcd 0xef 0x12 0x34 0x56 0x78 0x9a"
    assert detect(hex_dump).language == "zxx"
    r = run(QUESTIONS["en"], hex_dump)
    assert r.status == "skipped" and "answer has no recognisable language" in r.reason
    r = run(QUESTIONS["en"], "12345 678 90 == 42 * 17 + 3.14159")
    assert r.status == "skipped" and "0 letters" in r.reason


def test_code_urls_and_emails_are_ignored():
    answer = (
        "Die Regeln stehen hier: https://intranet.example.com/policies/annual-leave-policy.html "
        "und bei hr-team@example.com. ```python\nprint('hello world, this is english code')\n``` "
        "Sie haben 25 Urlaubstage pro Jahr."
    )
    cleaned = _clean(answer)
    assert "https" not in cleaned and "@" not in cleaned and "print" not in cleaned
    assert run(QUESTIONS["de"], answer).score == 0.0


def test_long_answers_are_cut():
    long_answer = ANSWERS["en"] + " " + " ".join([ANSWERS["de"]] * 100)
    assert len(_clean(long_answer)) <= MAX_CHARS
    # Only the first MAX_CHARS characters are examined: German dominates them.
    assert detect(long_answer).language == "de"


def test_expected_language_replaces_the_question():
    r = run(QUESTIONS["en"], ANSWERS["de"], expected_language="de")
    assert r.score == 0.0 and "expected German (de)" in r.reason
    r = run(QUESTIONS["de"], ANSWERS["de"], expected_language=" EN ")
    assert r.score == 1.0 and "expected English (en)" in r.reason
    # The question plays no part: short, or even missing, it does not skip the case.
    assert run("Hi", ANSWERS["fr"], expected_language="fr").score == 0.0
    assert run("", ANSWERS["fr"], expected_language="fr").score == 0.0
    assert run("", ANSWERS["fr"]).status == "skipped"


def test_options_are_validated():
    with pytest.raises(ValidationError, match="not an ISO 639-1 language code"):
        LanguageOptions.model_validate({"expected_language": "english"})
    with pytest.raises(ValidationError):
        LanguageOptions.model_validate({"min_confidence": 1.5})
    with pytest.raises(ValidationError):
        LanguageOptions.model_validate({"languages": ["en", "xx"]})
    with pytest.raises(ValidationError):
        LanguageOptions.model_validate({"unknown": 1})


def test_languages_option_restricts_the_candidates():
    # Galician-looking Portuguese is uncertain among all languages, clear among two.
    question = "A empresa paga o transporte público?"
    assert run(question, ANSWERS["pt"]).status == "skipped"
    r = run(question, ANSWERS["pt"], languages=["pt", "en"])
    assert r.score == 0.0
    assert detect(question, ["pt", "en"]).language == "pt"


def test_equivalent_languages_count_as_one():
    croatian = "Koliko dana godišnjeg odmora imam svake godine?"
    serbian = "Запослени имају право на двадесет пет дана годишњег одмора сваке године."
    # Alone, Croatian is split with Bosnian and Serbian (too uncertain to judge) ...
    assert detect(croatian).confidence < 0.5
    assert run(croatian, serbian, equivalent_languages=[]).status == "skipped"
    # ... as a group it is clear, and a Serbian answer is no mismatch.
    r = run(croatian, serbian)
    assert (r.status, r.score) == ("scored", 0.0)
    assert "bs/hr/sr together" in r.reason and r.reason.endswith("counted as the same language")
    nynorsk = "Hvor mange feriedagar har eg kvart år?"
    bokmal = "Ansatte har rett på tjuefem feriedager hvert år."
    assert (detect(nynorsk).language, detect(bokmal).language) == ("nn", "no")
    assert run(nynorsk, bokmal).score == 0.0
    assert run(nynorsk, bokmal, equivalent_languages=[]).score == 1.0
    assert run(nynorsk, ANSWERS["de"]).score == 1.0


def test_deterministic():
    pairs = [(QUESTIONS[q], ANSWERS[a]) for q in QUESTIONS for a in ("en", "pt")]
    first = [run(q, a).model_dump() for q, a in pairs]
    again = [run(q, a).model_dump() for q, a in pairs]
    assert first == again
    assert [detect(a) for _, a in pairs] == [detect(a) for _, a in pairs]
    assert sum(r["score"] for r in first) == len(pairs) - 2  # only en-en and pt-pt match


def test_float32_table_gives_the_libraries_probabilities():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    plain = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    plain.set_languages([*LANGUAGE_NAMES, "zxx"])
    for text in [*QUESTIONS.values(), *ANSWERS.values(), "Wie geht's?"]:
        ours = _identifier(tuple(LANGUAGE_NAMES)).rank(text)[:3]
        theirs = plain.rank(text)[:3]
        assert [code for code, _ in ours] == [code for code, _ in theirs]
        assert all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(ours, theirs, strict=True))


def test_language_names_match_the_model():
    labels = set(_base_identifier().labels)
    assert {code for code in labels if len(code) == 2} == set(LANGUAGE_NAMES)
    assert "zxx" in labels


def test_declaration():
    cls = resolve("language-mismatch")
    assert cls is LanguageMismatch and cls.requires.value == "nothing"
    spec = cls.primary_metric()
    assert (spec.name, spec.higher_is_better, spec.threshold, spec.kind) == (
        "Language mismatch",
        False,
        0.5,
        "pass_fail",
    )
