"""webread: a web-like reader, the file I/O of a static web server. Each
request picks a page by its popularity (Zipf, exponent 1, over the pages
in name order: a few are read often, most rarely) and reads the whole
file in 16 KiB reads, as a server sends it.

usage: python3 webread.py PAGES_DIR REQUESTS SEED
"""

import os
import random
import sys
from bisect import bisect
from itertools import accumulate


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    pages = sorted(os.path.join(sys.argv[1], n) for n in os.listdir(sys.argv[1]))
    requests, rng = int(sys.argv[2]), random.Random(int(sys.argv[3]))
    cumulative = list(accumulate(1 / (i + 1) for i in range(len(pages))))
    sent = 0
    for _ in range(requests):
        page = pages[min(bisect(cumulative, rng.random() * cumulative[-1]), len(pages) - 1)]
        with open(page, "rb", buffering=0) as f:
            while chunk := f.read(16384):
                sent += len(chunk)
    print(sent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
