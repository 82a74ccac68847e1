/* splitmix64: the suite programs' random numbers, the same sequence for a
 * seed whatever the libc (rand() differs between implementations). */
#ifndef SPLITMIX_H
#define SPLITMIX_H

static unsigned long long rng_state;

static unsigned long long next_random(void) {
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

#endif
