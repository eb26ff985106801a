"""Personal names masked as PERSON by an NER model the options name (evalrunner/privacy_names.py):
no model hub here, so each test builds a small spaCy pipeline itself, saves it to a folder
and configures that folder, the way a user configures theirs. Proves the whole path:
configured folder -> loaded once -> names masked as numbered placeholders, one per name
across a case, overlaps with the other finders, and a clear error when spaCy or the model
is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import spacy
from spacy.training import Example

from evalrunner.errors import ConfigError
from evalrunner.privacy import (
    ENV_PII,
    PiiKind,
    PiiMasker,
    PiiOptions,
    mask_case,
    masker_from_env,
    pii_options,
)
from evalrunner.privacy_names import load_pipeline

NAMES = ("Jane Doe", "John Smith", "María José García")


def save_ruler_model(folder: Path) -> str:
    """A blank English pipeline whose entity ruler knows a few names (and one organisation,
    whose label is not masked), saved as a user saves a pipeline."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    patterns = [
        {"label": "PERSON", "pattern": [{"LOWER": word.lower()} for word in name.split()]}
        for name in NAMES
    ]
    ruler.add_patterns([*patterns, {"label": "ORG", "pattern": "Acme"}])  # type: ignore[attr-defined]
    nlp.to_disk(folder)
    return str(folder)


@pytest.fixture
def ruler_model(tmp_path: Path) -> str:
    load_pipeline.cache_clear()
    return save_ruler_model(tmp_path / "names-model")


@pytest.fixture
def names(ruler_model: str) -> PiiMasker:
    return PiiMasker(PiiOptions(kinds=(*PiiOptions().kinds, PiiKind.PERSON), ner_model=ruler_model))


def test_names_are_masked_as_numbered_placeholders(names: PiiMasker) -> None:
    text = "Jane Doe asked John Smith at Acme; jane doe agreed."
    assert names.mask(text) == "<PERSON_1> asked <PERSON_2> at Acme; <PERSON_1> agreed."


def test_one_name_one_placeholder_across_question_answer_and_contexts(names: PiiMasker) -> None:
    masked = mask_case(
        "I am María José García, mail maria@ex.com",
        "Hello María José García, John Smith will call you.",
        ["Employee record: María José García, manager John Smith"],
        masker=names,
    )
    assert masked.question == "I am <PERSON_1>, mail <EMAIL_1>"
    assert masked.answer == "Hello <PERSON_1>, <PERSON_2> will call you."
    assert masked.contexts == ["Employee record: <PERSON_1>, manager <PERSON_2>"]
    assert masked.masked == {"EMAIL": 1, "PERSON": 2}


def test_the_model_loads_once_for_every_masker(ruler_model: str) -> None:
    options = PiiOptions(kinds=(PiiKind.PERSON,), ner_model=ruler_model)
    first, second = PiiMasker(options), PiiMasker(options)
    assert first._entities is not None and second._entities is not None
    assert first._entities.nlp is second._entities.nlp
    assert load_pipeline.cache_info().misses == 1


def test_overlaps_with_the_other_finders(tmp_path: Path) -> None:
    # a model that labels too much: a name run into an e-mail address, and a "name" that
    # is half an address; the validated finders win and nothing found stays visible
    load_pipeline.cache_clear()
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(  # type: ignore[attr-defined]
        [
            {"label": "PERSON", "pattern": [{"LOWER": "jane"}, {"LOWER": "doe"}]},
            {"label": "PERSON", "pattern": [{"LOWER": "john"}, {"LOWER": "carpenter"}]},
            {"label": "PERSON", "pattern": [{"TEXT": "75062"}, {"LOWER": "zed"}]},
        ]
    )
    nlp.to_disk(tmp_path / "m")
    masker = PiiMasker(PiiOptions(kinds=tuple(PiiKind), ner_model=str(tmp_path / "m")))
    text = (
        "Jane Doe <jane.doe@ex.com> lives at 225 E. John Carpenter Freeway, Irving, Texas 75062 Zed"
    )
    masked = masker.mask(text)
    # the e-mail is one EMAIL (not a PERSON inside it); the address around "John Carpenter"
    # is one ADDRESS; the model's span that runs on past the address ("75062 Zed") still
    # has its own part masked
    assert masked == "<PERSON_1> <<EMAIL_1>> lives at <ADDRESS_1> <PERSON_2>"
    assert "Carpenter" not in masked and "Zed" not in masked


def test_a_trained_ner_model_is_used_as_it_is(tmp_path: Path) -> None:
    # a statistical NER (not rules): a blank pipeline trained on a few sentences
    load_pipeline.cache_clear()
    spacy.util.fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("ner").add_label("PERSON")  # type: ignore[attr-defined]
    sentences = [
        ("Ask Jane Doe about leave.", "Jane Doe"),
        ("John Smith approved it.", "John Smith"),
        ("Send the form to Jane Doe today.", "Jane Doe"),
        ("The manager John Smith is away.", "John Smith"),
    ]
    examples = []
    for text, name in sentences:
        start = text.index(name)
        doc = nlp.make_doc(text)
        examples.append(
            Example.from_dict(doc, {"entities": [(start, start + len(name), "PERSON")]})
        )
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(30):
        nlp.update(examples, sgd=optimizer, drop=0.0)
    nlp.to_disk(tmp_path / "trained")
    masker = PiiMasker(PiiOptions(kinds=(PiiKind.PERSON,), ner_model=str(tmp_path / "trained")))
    assert masker.mask("Ask John Smith about leave.") == "Ask <PERSON_1> about leave."


def test_names_asked_for_without_a_model_is_refused_naming_what_to_configure() -> None:
    with pytest.raises(
        ConfigError, match=r"PERSON.*needs an NER model.*ner_model.*evalrunner\[ner\]"
    ):
        pii_options({"kinds": ["EMAIL", "PERSON"]})
    # and PERSON is not among the default kinds: masking works without the extra
    assert PiiKind.PERSON not in PiiOptions().kinds


def test_a_missing_model_fails_when_the_masker_is_built(tmp_path: Path) -> None:
    load_pipeline.cache_clear()
    options = PiiOptions(kinds=(PiiKind.PERSON,), ner_model=str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=r"NER model .*nowhere.* could not be loaded.*folder"):
        PiiMasker(options)
    blank = tmp_path / "blank"
    spacy.blank("en").to_disk(blank)
    with pytest.raises(ConfigError, match=r"no entity recognizer"):
        PiiMasker(PiiOptions(kinds=(PiiKind.PERSON,), ner_model=str(blank)))


def test_a_missing_spacy_names_the_extra_to_install(
    ruler_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "spacy", None)  # what "import spacy" meets without it
    with pytest.raises(ConfigError, match=r"needs spaCy.*pip install 'evalrunner\[ner\]'"):
        PiiMasker(PiiOptions(kinds=(PiiKind.PERSON,), ner_model=ruler_model))


def test_the_monitor_function_masks_names_from_its_environment(ruler_model: str) -> None:
    env = {ENV_PII: json.dumps({"kinds": ["EMAIL", "PERSON"], "ner_model": ruler_model})}
    masker = masker_from_env(env)
    assert masker is not None
    assert masker.mask("John Smith, js@ex.com") == "<PERSON_1>, <EMAIL_1>"


def test_labels_choose_what_the_model_masks(ruler_model: str) -> None:
    options = pii_options(
        {"kinds": ["ADDRESS"], "ner_model": ruler_model, "ner_labels": {"ORG": "ADDRESS"}}
    )
    assert PiiMasker(options).mask("Jane Doe at Acme") == "Jane Doe at <ADDRESS_1>"
    both = pii_options(
        {
            "kinds": ["PERSON", "ADDRESS"],
            "ner_model": ruler_model,
            "ner_labels": {"ORG": "ADDRESS", "PERSON": "PERSON"},
        }
    )
    assert PiiMasker(both).mask("Jane Doe at Acme") == "<PERSON_1> at <ADDRESS_1>"
    with pytest.raises(ConfigError, match=r"PERSON or ADDRESS only.*ORG: EMAIL"):
        pii_options({"ner_model": ruler_model, "ner_labels": {"ORG": "EMAIL"}})


def test_a_text_longer_than_the_model_takes_is_read_in_pieces(ruler_model: str) -> None:
    # spaCy refuses a text over nlp.max_length; the finder reads it in pieces cut at line
    # breaks and maps each name back to its place in the whole text
    from evalrunner.privacy_names import EntityFinder

    nlp = spacy.load(ruler_model)
    nlp.max_length = 40
    finder = EntityFinder(nlp, {"PERSON": "PERSON"})
    text = "first line mentions Jane Doe\n" * 3 + "and John Smith at the end"
    found = list(finder.find(text))
    assert [text[start:end] for start, end, _, _ in found] == [*["Jane Doe"] * 3, "John Smith"]
    assert {value for *_, value in found} == {"jane doe", "john smith"}


def test_a_model_that_never_labels_a_masked_kind_is_refused(tmp_path: Path) -> None:
    # A model whose names carry another label (a German pipeline's "PER" is mapped; a
    # custom one's "PERS" is not) found names and masked none of them: a silent skip.
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERS", "pattern": "Jane Doe"}])  # type: ignore[attr-defined]
    nlp.to_disk(tmp_path / "pers")
    model = str(tmp_path / "pers")
    with pytest.raises(ConfigError, match=r"never labels.*PERSON.*its labels: PERS.*ner_labels"):
        PiiMasker(PiiOptions(kinds=(PiiKind.PERSON,), ner_model=model))
    mapped = PiiOptions(kinds=(PiiKind.PERSON,), ner_model=model, ner_labels={"PERS": "PERSON"})
    assert PiiMasker(mapped).mask("I am Jane Doe") == "I am <PERSON_1>"


def test_names_asked_for_with_labels_that_map_no_name_are_refused(ruler_model: str) -> None:
    # ner_labels replaces the default map: one with no PERSON label cannot find a name
    with pytest.raises(ConfigError, match=r"PERSON.*no label of ner_labels maps to it"):
        pii_options(
            {"kinds": ["PERSON"], "ner_model": ruler_model, "ner_labels": {"ORG": "ADDRESS"}}
        )


def test_a_long_text_reaches_the_model_in_pieces_of_bounded_size(ruler_model: str) -> None:
    # A statistical NER holds ~3 MiB per KB of the text it is given (bench/RESULTS.md): a
    # near-1M-character question under spaCy's max_length took ~3 GB and killed the 3 GB
    # monitor function, invocation after invocation. The finder gives it bounded pieces,
    # cut at a line or sentence end rather than inside a word.
    from spacy.language import Language

    from evalrunner.privacy_names import PIECE_CHARS, EntityFinder

    seen: list[int] = []

    @Language.component("a10_record_length")
    def record_length(doc):  # type: ignore[no-untyped-def]
        seen.append(len(doc.text))
        return doc

    nlp = spacy.load(ruler_model)
    nlp.add_pipe("a10_record_length", first=True)
    assert nlp.max_length > 2 * PIECE_CHARS
    sentence = "Then Jane Doe wrote again. "
    text = sentence * (5 * PIECE_CHARS // len(sentence))  # one line, no newline
    found = list(EntityFinder(nlp, {"PERSON": "PERSON"}).find(text))
    assert seen and max(seen) <= PIECE_CHARS and sum(seen) == len(text)
    assert len(found) == text.count("Jane Doe")
    assert all(text[start:end] == "Jane Doe" for start, end, _, _ in found)


def test_a_problem_line_quoting_a_record_masks_its_names(tmp_path: Path, names: PiiMasker) -> None:
    # Problem lines quote the bad value and reach the terminal, --json, the deployed
    # function's reply and its log; they were masked with the default kinds only, so a
    # name in a refused record stayed there even when the run masks names.
    from evalrunner.monitor.runner import MonitorOptions, plan
    from evalrunner.monitor.watermark import LocalWatermarks

    logs = tmp_path / "logs"
    logs.mkdir()
    bad = {"id": "r1", "question": "hi", "answer": "ok", "timestamp": "Jane Doe jd@ex.com"}
    (logs / "app.jsonl").write_text(json.dumps(bad) + "\n", "utf-8")
    options = MonitorOptions(source=str(logs))
    found = plan(options, LocalWatermarks(tmp_path / "out"), masker=names)
    text = " ".join(p.text() for p in found.problems)
    assert "<EMAIL_1>" in text and "<PERSON_1>" in text and "Jane" not in text
    (problem,) = plan(options, LocalWatermarks(tmp_path / "out")).problems
    assert "Jane Doe" in problem.text()  # the default masking has no model


def test_a_model_needing_a_package_that_is_missing_is_a_config_error(tmp_path: Path) -> None:
    # spaCy's Japanese, Chinese, Korean, Thai... pipelines import a tokenizer package of
    # their own (sudachipy, jieba, ...): without it spacy.load raised a bare ImportError
    # out of the masker, not the configuration error that names what to install.
    save_ruler_model(tmp_path / "m")
    config = tmp_path / "m" / "config.cfg"
    config.write_text(config.read_text("utf-8").replace('lang = "en"', 'lang = "zz"'), "utf-8")
    load_pipeline.cache_clear()
    with pytest.raises(ConfigError, match=r"needs a package that is not installed.*zz"):
        PiiMasker(PiiOptions(kinds=(PiiKind.PERSON,), ner_model=str(tmp_path / "m")))


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("<b>Jane Doe</b> called", "<b><PERSON_1></b> called"),
        ("<td>John Smith</td><td>Jane Doe</td>", "<td><PERSON_1></td><td><PERSON_2></td>"),
        ("see [Jane Doe](https://ex.com/u/1)", "see [<PERSON_1>](https://ex.com/u/1)"),
        ("| Jane Doe|admin |", "| <PERSON_1>|admin |"),
    ],
)
def test_a_name_written_against_markup_is_found(names: PiiMasker, text: str, masked: str) -> None:
    # spaCy's tokenizer keeps "<b>Jane" and "Doe</b>" as one token each (and "Doe](https"),
    # so no model sees the name in an answer rendered as HTML, a Markdown link or a table.
    assert names.mask(text) == masked


def test_a_name_broken_across_a_wrapped_line_is_found(names: PiiMasker) -> None:
    # Hard-wrapped text (e-mails at 72 columns, logged tool output) breaks a name where
    # the line ends; the placeholder takes both lines' parts, one value.
    text = "the request came from Jane\nDoe, and Jane Doe\r\nagreed.\n\nJohn Smith"
    assert (
        names.mask(text)
        == "the request came from <PERSON_1>, and <PERSON_1>\r\nagreed.\n\n<PERSON_2>"
    )
