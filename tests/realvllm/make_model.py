"""Build a tiny Llama model directory for a real vLLM with ``--load-format dummy``.

Run with the real vLLM's own python (its venv has ``tokenizers`` and ``transformers``); nothing is
downloaded: the tokenizer is a byte-level BPE trained here on generated text, and the weights are
vLLM's random ones. ``make_model.py DIR [--no-chat-template]``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

# A chat template as simple as vLLM accepts: role-tagged turns, then the assistant's cue.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "head_dim": 32,  # the CPU attention backend needs head_dim >= 32
    "vocab_size": 4096,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "torch_dtype": "bfloat16",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tie_word_embeddings": False,
}


def corpus(lines: int = 4000) -> list[str]:
    """Text to train on; " word" (the wizard's prompt filler) is frequent, so it is one token."""
    rng = random.Random(7)
    words = ["word", "the", "latency", "token", "stream", "model", "server", "cache", "queue"]
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for _ in range(lines):
        picked = [rng.choice(words) for _ in range(8)]
        picked += ["".join(rng.choices(letters, k=rng.randint(2, 7))) for _ in range(4)]
        rng.shuffle(picked)
        out.append(" ".join(picked))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", type=Path)
    parser.add_argument("--no-chat-template", action="store_true")
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    special = ["<unk>", "<s>", "</s>"]
    trainer = trainers.BpeTrainer(
        vocab_size=CONFIG["vocab_size"],
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    if not args.no_chat_template:
        fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(args.directory)
    (args.directory / "config.json").write_text(json.dumps(CONFIG, indent=2))


if __name__ == "__main__":
    main()
