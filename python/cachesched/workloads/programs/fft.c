/* fft: the dissertation's "FFT" workload (seed 004, part B2): a DFT and
 * its inverse, compute-intensive. Each round transforms N complex points
 * (a radix-2, in-place, iterative Cooley-Tukey FFT: bit-reversal
 * permutation, then log2 N butterfly stages with twiddles from sin/cos),
 * transforms them back and checks the round trip.
 * Deterministic: its own seeded generator, no input files.
 *
 * usage: fft LOG2_POINTS ROUNDS SEED
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "splitmix.h"

typedef struct { double re, im; } complex_t;

static void transform(complex_t *x, long n, int inverse) {
    for (long i = 1, j = 0; i < n; i++) {
        long bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            complex_t t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
    for (long len = 2; len <= n; len <<= 1) {
        double angle = (inverse ? 2 : -2) * M_PI / len;
        for (long k = 0; k < len / 2; k++) {
            double wr = cos(angle * k), wi = sin(angle * k);
            for (long i = k; i < n; i += len) {
                complex_t *u = &x[i], *v = &x[i + len / 2];
                double tr = v->re * wr - v->im * wi, ti = v->re * wi + v->im * wr;
                v->re = u->re - tr;
                v->im = u->im - ti;
                u->re += tr;
                u->im += ti;
            }
        }
    }
    if (inverse)
        for (long i = 0; i < n; i++) x[i].re /= n, x[i].im /= n;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: fft LOG2_POINTS ROUNDS SEED\n");
        return 2;
    }
    long n = 1L << atoi(argv[1]), rounds = atol(argv[2]);
    rng_state = strtoull(argv[3], NULL, 10);
    complex_t *x = malloc(n * sizeof *x), *orig = malloc(n * sizeof *orig);
    if (!x || !orig) return 1;
    double error = 0;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < n; i++) {
            orig[i].re = (double)(next_random() >> 11) / 9007199254740992.0 - 0.5;
            orig[i].im = 0;
            x[i] = orig[i];
        }
        transform(x, n, 0);
        transform(x, n, 1);
        for (long i = 0; i < n; i++) error = fmax(error, fabs(x[i].re - orig[i].re));
    }
    printf("%g\n", error);
    if (error > 1e-9) {
        fprintf(stderr, "fft: round trip off by %g\n", error);
        return 1;
    }
    free(x);
    free(orig);
    return 0;
}
