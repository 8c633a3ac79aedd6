"""Knowledge documents (models.knowledge.documents.read, what an upload or a fetch runs before it
writes): the time to read a document's text and cut it into articles, for a Markdown file of about
--markdown-mb MB (default 2) and a PDF of --pages pages (default 100), with the articles made and
the largest of them.

  markdown  sections under headings of three levels, each a few paragraphs of about 80 words, some
            longer than an article: cut at the headings and at 4,000 characters
  pdf       written here by hand (uncompressed, Helvetica): 45 lines of text on each page, read by
            pypdf page by page and cut at 4,000 characters

No database and no server: the reading alone, --requests times each after --warmup unrecorded runs.
A Markdown table on stdout, progress on stderr.

    scripts/bench_documents [--markdown-mb 2] [--pages 100] [--requests 5] [--warmup 1]
"""
from __future__ import annotations

import random
import sys
import time

from . import options
from .harness import ROOT, log, median


def _parser():
    parser = options.parser("bench_documents", __doc__, options.rounds(5, warmup=1))
    parser.add_argument("--markdown-mb", type=float, default=2.0, help="the Markdown file's size in MB (default 2)")
    parser.add_argument("--pages", type=int, default=100, help="the PDF's pages (default 100)")
    return parser


WORDS = ("refund", "invoice", "card", "order", "parcel", "shipping", "within", "days", "the", "customer", "account",
         "payment", "is", "paid", "back", "to", "and", "number", "email", "office", "open", "from", "nine", "five")


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def markdown(size: int) -> bytes:
    rng = random.Random(3)
    parts, total, n = [], 0, 0
    while total < size:
        n += 1
        level = "#" * (1 + n % 3)
        paragraphs = [_sentence(rng, 80) for _ in range(rng.randint(1, 12))]
        section = f"{level} Section {n}\n\n" + "\n\n".join(paragraphs) + "\n\n"
        parts.append(section)
        total += len(section)
    return "".join(parts).encode()


def pdf(pages: int) -> bytes:
    """A PDF of ``pages`` pages of text, each object written by hand with its offset in the xref."""
    rng = random.Random(5)
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>",
               3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"}
    kids, number = [], 4
    for _ in range(pages):
        lines = [_sentence(rng, 12) for _ in range(45)]
        text = b"BT /F1 10 Tf 14 TL 50 770 Td " + b" ".join(b"(" + line.encode() + b") '" for line in lines) + b" ET"
        objects[number] = b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream"
        objects[number + 1] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                               b"/Resources << /Font << /F1 3 0 R >> >> >>" % number)
        kids.append(number + 1)
        number += 2
    objects[2] = b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) + b"] /Count %d >>" % pages
    out, offsets = bytearray(b"%PDF-1.4\n"), {}
    for n in sorted(objects):
        offsets[n] = len(out)
        out += b"%d 0 obj\n" % n + objects[n] + b"\nendobj\n"
    xref, size = len(out), max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size + b"".join(b"%010d 00000 n \n" % offsets[n]
                                                                  for n in range(1, size))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def _time(data: bytes, content_type: str, args) -> tuple[list[float], object]:
    from models.knowledge import documents
    times, read = [], None
    for i in range(args.warmup + args.requests):
        started = time.perf_counter()
        read = documents.read(data, content_type=content_type, name="Bench")
        if i >= args.warmup:
            times.append((time.perf_counter() - started) * 1000)
    return times, read


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from models.knowledge import documents
    documents.configure(max_bytes=1 << 30, fetch_timeout_s=15.0)
    rows = []
    for kind, data, content_type in (("markdown", markdown(int(args.markdown_mb * 1_000_000)), "text/markdown"),
                                     (f"pdf, {args.pages} pages", pdf(args.pages), "application/pdf")):
        log(f"{kind}: {len(data):,} bytes")
        times, read = _time(data, content_type, args)
        rows.append((kind, len(data), median(times), max(times), len(read.parts),
                     max(len(p.body) for p in read.parts)))
    print("| document | bytes | read and cut p50 ms | max ms | articles | longest article (chars) |")
    print("|---|---|---|---|---|---|")
    for kind, size, p50, worst, count, longest in rows:
        print(f"| {kind} | {size:,} | {p50:.0f} | {worst:.0f} | {count:,} | {longest:,} |")
    return 0
