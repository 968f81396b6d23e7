#!/usr/bin/env python3
"""gen_bpe_fixture.py - writes tests/models/data/bpe_hf_fixture.json: a byte-level BPE vocabulary
trained here, and the ids HF `tokenizers` gives for ~1000 strings (ASCII and not) under the
gpt2, llama-bpe, qwen2 and smollm pre-tokenizers. The C++ suite checks kdsl's tokenizer against it, so
CI needs no Python. Needs `pip install tokenizers`; run from the repository root."""
import json
import random
import sys

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

WORDS = ("the of and to in is that it was for on are with as I his they be at one have this from or had by "
         "hot word but what some we can out other were all there when up use your how said an each she "
         "don't I'm we'll they've she'd it's You're DON'T Shouldn't café naïve résumé Zürich façade "
         "über straße мир привет Москва Ελλάδα λόγος 東京 日本語 中文 한국어 こんにちは مرحبا שלום हिन्दी "
         "🙂 👍🏽 🇫🇷 ∑ √2 ½ Ⅻ ١٢٣ 3.14159 1,000,000 2024-01-31 12:30 $9.99 100% #tag @user a+b=c "
         "x_y foo.bar() [1,2] {k:v} <tag> \"quoted\" 'single' ... !!! ??? -- == ** ~/ \\path").split()
SPACES = [" ", " ", " ", " ", "  ", "   ", "\n", "\n\n", "\t", " \n", "\r\n", " \t ", "\u00a0", "\u3000"]


def random_text(rng, max_words):
    parts = []
    for _ in range(rng.randint(1, max_words)):
        w = rng.choice(WORDS)
        if rng.random() < 0.15:
            w = w.upper() if rng.random() < 0.5 else w.capitalize()
        if rng.random() < 0.1:
            w += str(rng.randint(0, 99999))
        parts.append(w)
        parts.append(rng.choice(SPACES))
    if rng.random() < 0.5:
        parts.pop()
    if rng.random() < 0.08:
        parts.insert(rng.randint(0, len(parts)), rng.choice(SPECIALS))
    return "".join(parts)


def build(vocab, merges, pre):
    bpe = models.BPE(vocab=vocab, merges=merges, ignore_merges=(pre == "llama-bpe"))
    tok = Tokenizer(bpe)
    if pre == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif pre == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    else:
        pattern = LLAMA3 if pre == "llama-bpe" else QWEN2
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIALS)
    return tok


def main():
    rng = random.Random(4)
    corpus = [random_text(rng, 12) for _ in range(4000)]
    trainer_tok = Tokenizer(models.BPE())
    trainer_tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=1200, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    trainer_tok.train_from_iterator(corpus, trainer)
    state = json.loads(trainer_tok.to_str())["model"]
    vocab = state["vocab"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in state["merges"]]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    assert all(vocab[t] == i for i, t in enumerate(tokens))

    tokenizers = {pre: build(vocab, merges, pre) for pre in ("gpt2", "llama-bpe", "qwen2", "smollm")}
    special_ids = [tokenizers["gpt2"].token_to_id(s) for s in SPECIALS]
    assert special_ids == list(range(len(tokens), len(tokens) + len(SPECIALS))), special_ids

    edge = ["", " ", "  ", "\n", " \n\n x", "a  b", "a\n\n\nb", "it's", "IT'S", "I'll've", "'", "''s", "12345678",
            "x1234y", "  12", "a  1", "v2.0 ١٢ Ⅻ", "hello world", "hello  world ", "tab\tsep", "<|im_start|>user\nhi<|im_end|>",
            "<|endoftext|><|endoftext|>", "a<|im_end|>b", "!!!\n\n", " !?\r\n", "\u00a0\u00a0x", "é", "日本\n語"]
    rng = random.Random(5)
    texts = edge + [random_text(rng, 6) for _ in range(1000)]
    cases = []
    for text in texts:
        case = {"text": text}
        for pre, tok in tokenizers.items():
            case[pre] = tok.encode(text, add_special_tokens=False).ids
        cases.append(case)
    fixture = {
        "generator": "scripts/gen_bpe_fixture.py",
        "tokenizers_version": __import__("tokenizers").__version__,
        "tokens": tokens + SPECIALS,
        "special_count": len(SPECIALS),
        "merges": [a + " " + b for a, b in merges],
        "cases": cases,
    }
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/models/data/bpe_hf_fixture.json"
    with open(out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
