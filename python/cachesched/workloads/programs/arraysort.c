/* arraysort: the dissertation's "Array Sort" workload (seed 004, part B2):
 * a C program with many sorting operations and lots of memory swaps in
 * and out. Each round shuffles an array of random ints by swaps, sorts it
 * with a quicksort that moves elements by swaps (Hoare partitioning, an
 * insertion sort below 16 elements), and checks the order.
 * Deterministic: its own seeded generator, no input files.
 *
 * usage: arraysort ELEMENTS ROUNDS SEED
 */
#include <stdio.h>
#include <stdlib.h>

#include "splitmix.h"

static void swap(int *a, int *b) {
    int t = *a;
    *a = *b;
    *b = t;
}

static void insertion_sort(int *a, long n) {
    for (long i = 1; i < n; i++)
        for (long j = i; j > 0 && a[j - 1] > a[j]; j--)
            swap(&a[j - 1], &a[j]);
}

static void quicksort(int *a, long n) {
    while (n > 16) {
        int pivot = a[n / 2];
        long i = -1, j = n;
        for (;;) {
            do i++; while (a[i] < pivot);
            do j--; while (a[j] > pivot);
            if (i >= j) break;
            swap(&a[i], &a[j]);
        }
        /* Recurse into the smaller side, loop on the larger. */
        if (j + 1 < n - j - 1) {
            quicksort(a, j + 1);
            a += j + 1;
            n -= j + 1;
        } else {
            quicksort(a + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    insertion_sort(a, n);
}

static void sift_down(int *a, long root, long n) {
    for (long child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && a[child] < a[child + 1]) child++;
        if (a[root] >= a[child]) return;
        swap(&a[root], &a[child]);
    }
}

static void heapsort(int *a, long n) {
    for (long i = n / 2 - 1; i >= 0; i--) sift_down(a, i, n);
    for (long end = n - 1; end > 0; end--) {
        swap(&a[0], &a[end]);
        sift_down(a, 0, end);
    }
}

static void merge_sort(int *a, int *buffer, long n) {
    if (n <= 16) {
        insertion_sort(a, n);
        return;
    }
    long half = n / 2;
    merge_sort(a, buffer, half);
    merge_sort(a + half, buffer, n - half);
    for (long i = 0; i < half; i++) buffer[i] = a[i];
    long i = 0, j = half, k = 0;
    while (i < half && j < n) a[k++] = buffer[i] <= a[j] ? buffer[i++] : a[j++];
    while (i < half) a[k++] = buffer[i++];
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: arraysort ELEMENTS ROUNDS SEED\n");
        return 2;
    }
    long n = atol(argv[1]), rounds = atol(argv[2]);
    rng_state = strtoull(argv[3], NULL, 10);
    int *a = malloc(n * sizeof *a), *buffer = malloc(n / 2 * sizeof *buffer + 1);
    if (!a || !buffer) return 1;
    for (long i = 0; i < n; i++) a[i] = (int)(next_random() >> 33);
    long long check = 0;
    for (long r = 0; r < rounds; r++) {
        for (long i = n - 1; i > 0; i--) swap(&a[i], &a[next_random() % (i + 1)]);
        switch (r % 3) {
        case 0: quicksort(a, n); break;
        case 1: heapsort(a, n); break;
        default: merge_sort(a, buffer, n);
        }
        for (long i = 1; i < n; i++)
            if (a[i - 1] > a[i]) {
                fprintf(stderr, "arraysort: out of order at %ld\n", i);
                return 1;
            }
        check += a[n / 2];
    }
    printf("%lld\n", check);
    free(a);
    free(buffer);
    return 0;
}
