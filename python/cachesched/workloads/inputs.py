"""Inputs of the benchmark suite, generated here so that recording needs no
downloads: text, C source, Go moves, protein sequences, video frames, XML,
a ray-tracing scene and SQL. Each generator is seeded and writes the same
bytes on every machine (Python's ``random.Random`` sequence is fixed for a
seed), and takes a scale so that one program has a CI-sized and a full-sized
input.
"""

from __future__ import annotations

import random
from pathlib import Path

SYLLABLES = ("ka", "lo", "mi", "ter", "an", "sto", "pre", "vel", "ox", "un", "dra", "qui", "sel", "bor", "ne", "ith")


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    return ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(size)]


def _zipf_words(rng: random.Random, vocabulary: list[str], n: int) -> list[str]:
    # Word frequencies of natural text fall off as 1/rank.
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    return rng.choices(vocabulary, weights=weights, k=n)


def mailbox(path: Path, messages: int, seed: int = 1) -> str:
    """Messages of a From: header and a body of Zipf-distributed words."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng, 4000)
    hosts = ["example", "mail", "lists", "corp"]
    with path.open("w") as f:
        for i in range(messages):
            sender = f"{rng.choice(vocabulary)}{i % 97}@{rng.choice(hosts)}.org"
            body = " ".join(_zipf_words(rng, vocabulary, rng.randint(20, 120)))
            f.write(f"From: {sender}\n{body}.\n\n")
    return f"{messages} generated mail messages, Zipf words over a 4000-word vocabulary"


def mixed_data(path: Path, size: int, seed: int = 1) -> str:
    """Text, a table of numbers and noise in turn: what bzip2 is fed in SPEC."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng, 2000)
    out = bytearray()
    while len(out) < size:
        part = rng.randrange(3)
        if part == 0:
            out += " ".join(_zipf_words(rng, vocabulary, 400)).encode()
        elif part == 1:
            out += "".join(f"{rng.randint(0, 99999):6d},{rng.random():.4f}\n" for _ in range(60)).encode()
        else:
            out += rng.randbytes(512)
    path.write_bytes(bytes(out[:size]))
    return f"{size:,} bytes of generated text, number tables and random bytes"


def c_source(path: Path, functions: int, seed: int = 1) -> str:
    """A C file of ``functions`` functions with loops, structs, switches and calls."""
    rng = random.Random(seed)
    lines = ["#include <stddef.h>", "struct item { int key; double weight; struct item *next; };", ""]
    for i in range(functions):
        locals_ = [f"v{j}" for j in range(rng.randint(3, 8))]
        lines.append(f"static double f{i}(struct item *list, int n, double scale) {{")
        lines.append("    " + " ".join(f"double {v} = {rng.random():.3f} * scale;" for v in locals_))
        lines.append("    for (int k = 0; k < n; k++) {")
        for _ in range(rng.randint(2, 6)):
            a, b, c = rng.sample(locals_, 3) if len(locals_) >= 3 else (locals_[0],) * 3
            op = rng.choice("+-*")
            lines.append(f"        {a} = {b} {op} {c} * (k + {rng.randint(1, 9)});")
        lines.append(f"        switch (k % {rng.randint(3, 7)}) {{")
        for case in range(3):
            lines.append(f"        case {case}: {rng.choice(locals_)} += list ? list->weight : {case}; break;")
        lines.append("        default: break;\n        }")
        lines.append("        if (list) list = list->next;")
        lines.append("    }")
        if i > 0:
            lines.append(f"    {locals_[0]} += f{rng.randrange(i)}(list, n / 2, scale * 0.5);")
        lines.append(f"    return {' + '.join(locals_)};")
        lines.append("}")
    lines.append("double entry(struct item *list, int n) {")
    lines.append("    double total = 0;")
    for i in range(functions):
        lines.append(f"    total += f{i}(list, n, {i + 1}.0);")
    lines.append("    return total;\n}")
    path.write_text("\n".join(lines) + "\n")
    return f"a generated C file of {functions} functions (loops, switches, calls), compiled at -O2"


def gtp_game(path: Path, moves: int, size: int = 9, seed: int = 1) -> str:
    """GTP commands: a board, random legal-looking moves, and genmove requests."""
    rng = random.Random(seed)
    columns = "ABCDEFGHJKLMNOPQRST"[:size]
    points = [f"{c}{r}" for c in columns for r in range(1, size + 1)]
    rng.shuffle(points)
    commands = [f"boardsize {size}", "clear_board", "komi 6.5"]
    colours = ("black", "white")
    for i in range(moves):
        commands.append(f"play {colours[i % 2]} {points[i]}")
    commands += [f"genmove {colours[moves % 2]}", f"genmove {colours[(moves + 1) % 2]}", "estimate_score", "quit"]
    path.write_text("\n".join(commands) + "\n")
    return f"a {size}x{size} game: {moves} seeded moves then two generated moves and a score estimate"


AMINO = "ACDEFGHIKLMNPQRSTVWY"


def protein_family(alignment: Path, database: Path, members: int, length: int, sequences: int,
                   seed: int = 1) -> str:
    """A Stockholm alignment of a family (mutated copies of one ancestor) and
    a FASTA database of random proteins with some members planted in it."""
    rng = random.Random(seed)
    ancestor = [rng.choice(AMINO) for _ in range(length)]

    def member() -> str:
        return "".join(rng.choice(AMINO) if rng.random() < 0.25 else a for a in ancestor)

    with alignment.open("w") as f:
        f.write("# STOCKHOLM 1.0\n")
        for i in range(members):
            f.write(f"seq{i:<6} {member()}\n")
        f.write("//\n")
    with database.open("w") as f:
        for i in range(sequences):
            if i % 50 == 0:
                body = "".join(rng.choice(AMINO) for _ in range(40)) + member()
            else:
                body = "".join(rng.choice(AMINO) for _ in range(rng.randint(100, 500)))
            f.write(f">prot{i}\n")
            for k in range(0, len(body), 60):
                f.write(body[k:k + 60] + "\n")
    return (f"a family of {members} sequences of {length} residues (hmmbuild), searched in {sequences} "
            "generated proteins")


def video(path: Path, width: int, height: int, frames: int, seed: int = 1) -> str:
    """Raw YUV 4:2:0 frames: moving gradients and blocks with noise."""
    rng = random.Random(seed)
    out = bytearray()
    for t in range(frames):
        for y in range(height):
            row = bytes(((x + 2 * t) * 3 + y + ((x // 16 + y // 16 + t) % 2) * 40 + rng.randrange(8)) & 0xFF
                        for x in range(width))
            out += row
        for _ in range(2):
            for y in range(height // 2):
                out += bytes(((x + y + t) * 2) & 0xFF for x in range(width // 2))
    path.write_bytes(bytes(out))
    return f"{frames} generated {width}x{height} YUV 4:2:0 frames (moving gradients, blocks, noise)"


def catalog(document: Path, stylesheet: Path, items: int, seed: int = 1) -> str:
    """An XML catalog and an XSLT stylesheet that sorts, groups and numbers it."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng, 500)
    categories = vocabulary[:20]
    with document.open("w") as f:
        f.write('<?xml version="1.0"?>\n<catalog>\n')
        for i in range(items):
            words = " ".join(_zipf_words(rng, vocabulary, rng.randint(3, 12)))
            f.write(f'  <item id="i{i}" category="{rng.choice(categories)}" price="{rng.randint(1, 99999) / 100}">'
                    f"<name>{words}</name><stock>{rng.randint(0, 500)}</stock></item>\n")
        f.write("</catalog>\n")
    stylesheet.write_text("""<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html"/>
  <xsl:key name="by-category" match="item" use="@category"/>
  <xsl:template match="/catalog">
    <html><body>
      <xsl:for-each select="item[generate-id() = generate-id(key('by-category', @category)[1])]">
        <xsl:sort select="@category"/>
        <h2><xsl:value-of select="@category"/> (<xsl:value-of select="count(key('by-category', @category))"/>)</h2>
        <table>
          <xsl:for-each select="key('by-category', @category)">
            <xsl:sort select="@price" data-type="number" order="descending"/>
            <tr><td><xsl:number value="position()" format="1."/></td>
                <td><xsl:value-of select="translate(name, 'aeiou', 'AEIOU')"/></td>
                <td><xsl:value-of select="round(@price * stock * 100) div 100"/></td></tr>
          </xsl:for-each>
        </table>
      </xsl:for-each>
    </body></html>
  </xsl:template>
</xsl:stylesheet>
""")
    return f"a generated XML catalog of {items} items, grouped (Muenchian), sorted and formatted by XSLT"


def scene(path: Path, spheres: int, seed: int = 1) -> str:
    """A POV-Ray scene: a grid of textured spheres, CSG objects, two lights."""
    rng = random.Random(seed)
    parts = ["#version 3.7;", "global_settings { assumed_gamma 1.0 }",
             "camera { location <0, 6, -14> look_at <0, 0, 0> }",
             "light_source { <10, 20, -10> color rgb 1 }", "light_source { <-15, 10, -5> color rgb 0.6 }",
             "plane { y, -1 pigment { checker color rgb 0.9 color rgb 0.2 } finish { reflection 0.2 } }"]
    side = max(1, int(spheres ** 0.5))
    for i in range(spheres):
        x, z = i % side - side / 2, i // side - side / 2
        r, g, b = (rng.random() for _ in range(3))
        parts.append(f"sphere {{ <{x * 1.3:.2f}, {rng.random():.2f}, {z * 1.3:.2f}>, 0.5 "
                     f"pigment {{ color rgb <{r:.2f}, {g:.2f}, {b:.2f}> }} "
                     f"finish {{ phong 0.8 reflection {rng.random() * 0.3:.2f} }} }}")
    parts.append("difference { box { <-1, -1, -1>, <1, 1, 1> } sphere { 0, 1.3 } "
                 "pigment { color rgb <0.8, 0.5, 0.2> } translate <4, 0.5, 3> }")
    path.write_text("\n".join(parts) + "\n")
    return f"a generated scene of {spheres} reflective spheres, a CSG object and two lights"


def sql_script(path: Path, rows: int, seed: int = 1) -> str:
    """SQL: tables filled by recursive CTEs, an index, joins, grouping, sorting."""
    path.write_text(f"""
CREATE TABLE customer(id INTEGER PRIMARY KEY, region INTEGER, name TEXT);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, amount REAL, day INTEGER);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows // 10})
INSERT INTO customer SELECT i, (i * 7919 + {seed}) % 17, 'c' || hex(i * 2654435761 % 1000003) FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
INSERT INTO orders SELECT i, 1 + (i * 48271 + {seed}) % {rows // 10}, ((i * 69621) % 100000) / 100.0, i % 365 FROM n;
CREATE INDEX orders_customer ON orders(customer);
SELECT c.region, count(*), sum(o.amount), avg(o.amount) FROM orders o JOIN customer c ON c.id = o.customer
  GROUP BY c.region ORDER BY 3 DESC;
SELECT name, total FROM (SELECT customer, sum(amount) AS total FROM orders GROUP BY customer)
  JOIN customer ON customer.id = customer ORDER BY total DESC LIMIT 10;
SELECT day, count(DISTINCT customer) FROM orders WHERE amount > 500 GROUP BY day ORDER BY day LIMIT 20;
UPDATE orders SET amount = amount * 1.1 WHERE day % 7 = 0;
DELETE FROM orders WHERE amount < 50;
SELECT count(*), sum(amount) FROM orders;
""")
    return f"SQL on an in-memory database: {rows:,} orders of {rows // 10:,} customers, joins, grouping, updates"


#: G.711's sampling rate.
G711_RATE = 8000


def voice(seconds: float, seed: int = 1) -> list[int]:
    """16-bit samples at 8 kHz shaped like a telephone call: talk spurts
    (a pitch between 90 and 250 Hz and two formants, a syllable envelope)
    and pauses with line noise."""
    import math

    rng = random.Random(seed)
    out: list[int] = []
    n = int(seconds * G711_RATE)
    while len(out) < n:
        length = int(rng.uniform(0.3, 1.2) * G711_RATE)
        if rng.random() < 0.35:  # a pause
            out += [int(rng.gauss(0, 40)) for _ in range(length)]
            continue
        pitch, f1, f2 = rng.uniform(90, 250), rng.uniform(300, 900), rng.uniform(900, 2500)
        syllable = rng.uniform(3, 6)
        for i in range(length):
            t = i / G711_RATE
            envelope = 0.5 - 0.5 * math.cos(2 * math.pi * syllable * t)
            wave = (math.sin(2 * math.pi * pitch * t) + 0.5 * math.sin(2 * math.pi * f1 * t)
                    + 0.25 * math.sin(2 * math.pi * f2 * t))
            out.append(int(9000 * envelope * wave + rng.gauss(0, 40)))
    return out[:n]


def ulaw(sample: int) -> int:
    """A 16-bit sample in G.711 mu-law, as the ITU's reference code (Sun's
    g711.c) encodes it: 14 bits, negative values rounded away from zero,
    bias 33, clip 8159, a 3-bit segment and a 4-bit mantissa, bits
    inverted."""
    value, mask = sample >> 2, 0xFF
    if value < 0:
        value, mask = -value, 0x7F
    value = min(value, 8159) + 33
    segment = max(0, value.bit_length() - 6)
    if segment > 7:  # the clipped top: the largest code
        return 0x7F ^ mask
    return ((segment << 4) | ((value >> (segment + 1)) & 0x0F)) ^ mask


def g711_call(path: Path, seconds: float, seed: int = 1) -> str:
    """A call's audio as raw G.711 mu-law at 8 kHz (what an RTP stream of
    PCMU carries)."""
    path.write_bytes(bytes(ulaw(s) for s in voice(seconds, seed)))
    return f"{seconds:g} s of a generated call (talk spurts and pauses) in G.711 mu-law, 8 kHz"


#: The music's sampling rate (a CD's).
MUSIC_RATE = 44100


def music(path: Path, seconds: float, seed: int = 1) -> str:
    """A 16-bit stereo WAV of generated music: a chord a beat (a root and
    its third and fifth, each with two overtones, a decaying envelope), a
    bass note and a little noise, so that an MP3 encoder has tones and
    transients to code."""
    import array
    import math
    import wave

    rng = random.Random(seed)
    n, beat = int(seconds * MUSIC_RATE), MUSIC_RATE // 2
    samples = array.array("h")
    for start in range(0, n, beat):
        root = 110 * 2 ** (rng.randrange(24) / 12)
        notes = [root, root * 2 ** (rng.choice((3, 4)) / 12), root * 2 ** (7 / 12)]
        bass = root / 2
        for i in range(min(beat, n - start)):
            t = i / MUSIC_RATE
            envelope = math.exp(-3 * t)
            tone = sum(math.sin(2 * math.pi * f * t) + 0.3 * math.sin(4 * math.pi * f * t)
                       + 0.1 * math.sin(6 * math.pi * f * t) for f in notes)
            left = 4000 * envelope * tone + 3000 * math.sin(2 * math.pi * bass * t) + rng.gauss(0, 100)
            right = 4000 * envelope * tone * 0.8 + 3000 * math.sin(2 * math.pi * bass * t) + rng.gauss(0, 100)
            samples.append(max(-32768, min(32767, int(left))))
            samples.append(max(-32768, min(32767, int(right))))
    with wave.open(str(path), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(MUSIC_RATE)
        out.writeframes(samples.tobytes())
    return f"{seconds:g} s of generated music (a chord a beat over a bass), 44.1 kHz stereo"


def image(path: Path, width: int, height: int, colors: int | None = None, seed: int = 1) -> str:
    """A binary PPM photograph-like image: smooth gradients, a few discs
    and noise; with ``colors`` its pixels come from that many colours (a
    palette image, what a GIF encoder takes)."""
    rng = random.Random(seed)
    discs = [(rng.uniform(0, width), rng.uniform(0, height), rng.uniform(5, width / 4),
              [rng.randrange(256) for _ in range(3)]) for _ in range(12)]
    palette = [[rng.randrange(256) for _ in range(3)] for _ in range(colors or 0)]
    out = bytearray()
    for y in range(height):
        for x in range(width):
            pixel = [(x * 255) // width, (y * 255) // height, ((x + y) * 127) // (width + height)]
            for cx, cy, r, c in discs:
                if (x - cx) ** 2 + (y - cy) ** 2 < r * r:
                    pixel = c
            pixel = [max(0, min(255, v + rng.randrange(-12, 13))) for v in pixel]
            if palette:
                pixel = palette[(pixel[0] * 7 + pixel[1] * 3 + pixel[2]) * len(palette) // (11 * 256)]
            out += bytes(pixel)
    path.write_bytes(f"P6\n{width} {height}\n255\n".encode() + bytes(out))
    kind = f"{colors}-colour palette" if colors else "24-bit"
    return f"a {width}x{height} {kind} image (gradients, discs, noise)"
