"""Structure-aware chunking: a chunk never crosses a heading; a long section is cut at
paragraph breaks, and a long paragraph at sentence ends (sentencex), so every chunk is a run of
whole sentences under one heading, which is what an expected context should be."""

from __future__ import annotations

from pydantic import BaseModel

from evalrunner.evaluators.sentences import split_sentences
from evalrunner.generate.documents import Document

DEFAULT_MAX_WORDS = 160
#: A section shorter than this joins the next one of the same document (a heading with one
#: line under it is not worth a question of its own).
MIN_WORDS = 12


class Chunk(BaseModel):
    id: str  # "<document>#<n>"
    document: str
    heading: str
    text: str

    @property
    def words(self) -> int:
        return len(self.text.split())


def _pieces(text: str, max_words: int) -> list[str]:
    """Paragraphs, and sentences of a paragraph over the limit, packed up to ``max_words``
    (paragraphs joined by a blank line, sentences of one paragraph by a space)."""
    units: list[tuple[str, str]] = []  # (text, joiner before it)
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if not paragraph:
            continue
        if len(paragraph.split()) <= max_words:
            units.append((paragraph, "\n\n"))
        else:
            sentences = split_sentences(paragraph)
            units += [(s, "\n\n" if i == 0 else " ") for i, s in enumerate(sentences)]
    out: list[str] = []
    for unit, joiner in units:
        if out and len(out[-1].split()) + len(unit.split()) <= max_words:
            out[-1] = f"{out[-1]}{joiner}{unit}"
        else:
            out.append(unit)
    return out


def chunk_documents(documents: list[Document], max_words: int = DEFAULT_MAX_WORDS) -> list[Chunk]:
    chunks: list[Chunk] = []
    for document in documents:
        carry_heading, carry = "", ""
        n = 0
        for section in document.sections:
            text = f"{carry}\n\n{section.text}".strip() if carry else section.text
            heading = carry_heading or section.heading
            if len(text.split()) < MIN_WORDS:
                carry_heading, carry = heading, text
                continue
            carry_heading, carry = "", ""
            for piece in _pieces(text, max_words):
                n += 1
                chunks.append(
                    Chunk(
                        id=f"{document.name}#{n}",
                        document=document.name,
                        heading=section.heading or heading,
                        text=piece,
                    )
                )
        if carry:
            if chunks and chunks[-1].document == document.name:
                chunks[-1].text += f"\n\n{carry}"
            else:
                n += 1
                chunks.append(
                    Chunk(
                        id=f"{document.name}#{n}",
                        document=document.name,
                        heading=carry_heading,
                        text=carry,
                    )
                )
    return chunks
