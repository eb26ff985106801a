"""Tiny random models, built on the spot, in the exact on-disk formats the real ones use.

They exercise the real loading and inference code (sentence-transformers, CrossEncoder,
detoxify's checkpoint format, a GPT-2 causal LM, bert-score) in milliseconds. Their scores
mean nothing; quality is tested with the packaged MiniLM.
"""

from __future__ import annotations

import json
from pathlib import Path

WORDS = (
    "the a an is are was were be to of and or in on at for with by from as it this that "
    "cat dog mat sat paris france capital city leave days annual policy employee hr salary "
    "answer question context not no yes you we they he she i hate love stupid idiot kill "
    "good bad great terrible sun moon blue sky water fire . , ! ? ' -"
).split()
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"
LETTERS = list(_CHARS) + [f"##{c}" for c in _CHARS]
VOCAB = list(dict.fromkeys(SPECIAL + LETTERS + WORDS))
#: detoxify's checkpoint class names (renamed by detoxify to toxicity, severe_toxicity, ...).
DETOXIFY_CLASSES = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]


def _bert_config(num_labels: int = 2, **extra):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=num_labels,
        **extra,
    )


def _tokenizer(folder: Path):
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizerFast(vocab={t: i for i, t in enumerate(VOCAB)}, do_lower_case=True)
    tokenizer.model_max_length = 128
    tokenizer.save_pretrained(str(folder))
    return tokenizer


def build_encoder(folder: Path) -> Path:
    """A sentence-transformers bi-encoder: BERT (2 layers, 32 dims) + mean pooling."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertModel

    torch.manual_seed(0)
    raw = folder / "_raw"
    _tokenizer(raw)
    BertModel(_bert_config()).save_pretrained(str(raw))
    transformer = Transformer(str(raw), max_seq_length=128)
    model = SentenceTransformer(modules=[transformer, Pooling(32, pooling_mode="mean")])
    model.save(str(folder))
    return folder


def build_cross_encoder(folder: Path, labels: list[str] | None = None) -> Path:
    """A CrossEncoder: one sigmoid output, or one logit per label (``labels``, e.g. NLI)."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(1)
    labels = labels or ["LABEL_0"]
    config = _bert_config(
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    _tokenizer(folder)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    return folder


def build_detoxify(folder: Path) -> Path:
    """A detoxify checkpoint (config + state_dict, as detoxify's training writes it) next to
    the Hugging Face config and tokenizer it loads offline."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(2)
    config = _bert_config(num_labels=len(DETOXIFY_CLASSES))
    _tokenizer(folder)
    model = BertForSequenceClassification(config)
    model.save_pretrained(str(folder))
    checkpoint = {
        "config": {
            "arch": {
                "args": {
                    "model_type": str(folder),
                    "model_name": "BertForSequenceClassification",
                    "tokenizer_name": "BertTokenizerFast",
                    "num_classes": len(DETOXIFY_CLASSES),
                }
            },
            "dataset": {"args": {"classes": DETOXIFY_CLASSES}},
        },
        "state_dict": model.state_dict(),
    }
    torch.save(checkpoint, folder / "tiny-detoxify.ckpt")
    # detoxify reads the weights from the checkpoint only
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    return folder


def build_gpt2(folder: Path) -> Path:
    """A GPT-2 causal LM (2 layers) with a byte-level BPE tokenizer trained on the spot."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.manual_seed(3)
    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    corpus = [" ".join(WORDS)] * 4 + ["The cat sat on the mat.", "Paris is the capital."]
    bpe.train_from_iterator(corpus, vocab_size=400, special_tokens=["<|endoftext|>"])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        model_max_length=64,
    )
    tokenizer.save_pretrained(str(folder))
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(str(folder))
    return folder


def build_all(root: Path) -> dict[str, Path]:
    return {
        "encoder": build_encoder(root / "tiny-encoder"),
        "cross_encoder": build_cross_encoder(root / "tiny-cross-encoder"),
        "nli": build_cross_encoder(
            root / "tiny-nli", labels=["contradiction", "entailment", "neutral"]
        ),
        "detoxify": build_detoxify(root / "tiny-detoxify"),
        "gpt2": build_gpt2(root / "tiny-gpt2"),
    }


def write_manifest(paths: dict[str, Path], file: Path) -> None:
    file.write_text(json.dumps({k: str(v) for k, v in paths.items()}), encoding="utf-8")
