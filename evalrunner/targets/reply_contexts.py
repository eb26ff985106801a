"""Where a reply's retrieved chunks and the documents they came from are found: context
lists of strings or objects (``text``/``content``/``page_content``...), document ids and
URIs, and Bedrock's ``retrievedReferences`` and ``RetrievalResultLocation`` (shared by
agents, knowledge bases and payloads that pass Bedrock citations through).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evalrunner.targets.reply_keys import CONTEXT_KEYS, DOCUMENT_FIELDS, DOCUMENT_KEYS, TEXT_FIELDS


def default_contexts(records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    contexts: list[str] = []
    documents: list[str] = []
    used_key: str | None = None
    for record in records:
        for key in CONTEXT_KEYS:
            if record.get(key) is not None:
                used_key = key
                collect_contexts(record[key], contexts, documents)
                break
        if used_key:
            break
    for record in records:
        for key in DOCUMENT_KEYS:
            if record.get(key) is not None:
                collect_documents(record[key], documents, contexts if not contexts else None)
        # {"contexts": [...], "sources": ["a.pdf"]}: sources name documents, not chunks.
        if used_key not in (None, "sources") and isinstance(record.get("sources"), list):
            collect_documents(record["sources"], documents)
    return contexts, documents


def collect_contexts(value: Any, contexts: list[str], documents: list[str]) -> None:
    if value is None:
        return
    if isinstance(value, str):
        contexts.append(value)
        return
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, Iterable):
        contexts.append(str(value))
        return
    for item in value:
        if isinstance(item, str):
            contexts.append(item)
        elif isinstance(item, dict):
            if isinstance(item.get("retrievedReferences"), list):  # a Bedrock citation
                ctx, docs = bedrock_references(item["retrievedReferences"])
                contexts.extend(ctx)
                documents.extend(docs)
                continue
            text = _text_of(item)
            if text is not None:
                contexts.append(text)
            document = _document_of(item)
            if document is not None:
                documents.append(document)
        elif item is not None:
            contexts.append(str(item))


def collect_documents(value: Any, documents: list[str], contexts: list[str] | None = None) -> None:
    """Document ids/URIs; ``contexts`` (when given) also takes texts of document objects."""
    if value is None:
        return
    items = [value] if isinstance(value, str | dict) else value
    if not isinstance(items, Iterable):
        documents.append(str(items))
        return
    for item in items:
        if isinstance(item, str):
            documents.append(item)
        elif isinstance(item, dict):
            document = _document_of(item) or first_str(item, ("id", "name"))
            if document is not None:
                documents.append(document)
            if contexts is not None:
                text = _text_of(item)
                if text is not None:
                    contexts.append(text)
        elif item is not None:
            documents.append(str(item))


def first_str(obj: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _text_of(item: dict[str, Any]) -> str | None:
    for field in TEXT_FIELDS:
        value = item.get(field)
        if isinstance(value, str):
            return value
        if isinstance(value, dict):  # {"content": {"text": "..."}} (Bedrock)
            nested = first_str(value, TEXT_FIELDS)
            if nested is not None:
                return nested
    return None


def _document_of(item: dict[str, Any]) -> str | None:
    for field in DOCUMENT_FIELDS:
        value = item.get(field)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, dict):
            found = location_uri(value) or first_str(value, ("id", "name", "source"))
            if found:
                return found
    metadata = item.get("metadata")
    if isinstance(metadata, dict):
        return first_str(
            metadata, ("source", "uri", "url", "document", "x-amz-bedrock-kb-source-uri")
        )
    return None


def location_uri(location: Mapping[str, Any]) -> str | None:
    """A Bedrock ``RetrievalResultLocation`` (or any {uri|url} dict) as one document string.

    Bedrock nests the address under a per-source key (s3Location.uri, webLocation.url,
    confluenceLocation.url, customDocumentLocation.id, sqlLocation.query, ...); the key set
    keeps growing, so any nested dict with uri/url/id is accepted.
    """
    direct = first_str(location, ("uri", "url"))
    if direct:
        return direct
    for key, value in location.items():
        if key != "type" and isinstance(value, dict):
            found = first_str(value, ("uri", "url", "id", "query"))
            if found:
                return found
    return None


def bedrock_references(references: Iterable[Any]) -> tuple[list[str], list[str]]:
    """Bedrock ``retrievedReferences`` → (chunk texts, document URIs).

    Shared by agents, knowledge bases and payloads that pass Bedrock citations through.
    """
    contexts: list[str] = []
    documents: list[str] = []
    for reference in references or ():
        if not isinstance(reference, dict):
            continue
        content = reference.get("content") or {}
        text = content.get("text") if isinstance(content, dict) else None
        if text is None and isinstance(content, dict):
            rows = content.get("row")
            if isinstance(rows, list) and rows:
                text = "; ".join(
                    f"{r.get('columnName')}: {r.get('columnValue')}"
                    for r in rows
                    if isinstance(r, dict)
                )
            elif isinstance(content.get("audio"), dict):
                text = content["audio"].get("transcription")
            elif isinstance(content.get("video"), dict):
                text = content["video"].get("summary")
        if isinstance(text, str):
            contexts.append(text)
        location = reference.get("location")
        document = location_uri(location) if isinstance(location, dict) else None
        if document is None and isinstance(reference.get("metadata"), dict):
            document = first_str(reference["metadata"], ("x-amz-bedrock-kb-source-uri",))
        if document:
            documents.append(document)
    return contexts, documents
