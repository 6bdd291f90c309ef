#!/usr/bin/env python3
"""A multiple-choice task file of long contexts for timing `orthros eval mc` (issue 26: 100 questions at 1K context
on a GPU), from the committed KJV text alone (Python's standard library; nothing downloaded).

    python3 evals/make_mc_long.py [--questions 100] [--chars 4200] > /tmp/mc-long.jsonl

Each line is the generic layout {"context", "choices", "gold"}: a passage of about --chars characters (4200 is about
1K SmolLM2 tokens) from Genesis or Exodus at a seeded random place, then "\nQuestion: Which book of the Bible is this
passage from?\nAnswer:"; the choices are four book names, the gold the passage's book.
"""
import argparse
import json
import os
import random
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(ROOT, "data", "text", "kjv-genesis-exodus.txt")
BOOKS = ["Genesis", "Exodus", "Leviticus", "Numbers"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--chars", type=int, default=4200)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    text = open(TEXT, encoding="utf-8").read()
    split = re.search(r"^Exodus 1$", text, re.M).start()
    books = {"Genesis": text[:split], "Exodus": text[split:]}
    rnd = random.Random(a.seed)
    for i in range(a.questions):
        book = "Genesis" if i % 2 == 0 else "Exodus"
        body = re.sub(r"\s+", " ", re.sub(r"^(Genesis|Exodus) \d+$", " ", books[book], flags=re.M))
        start = rnd.randrange(0, len(body) - a.chars)
        passage = body[start:start + a.chars].strip()
        print(json.dumps({"context": passage + "\nQuestion: Which book of the Bible is this passage from?\nAnswer:",
                          "choices": BOOKS, "gold": BOOKS.index(book), "id": f"kjv-{i}"}))


if __name__ == "__main__":
    main()
