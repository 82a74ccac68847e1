/* netflow: the suite's stand-in for SPEC CPU2006 429.mcf.
 *
 * mcf solves minimum-cost flow with a network simplex: its time goes to the
 * pricing loop, which streams over the arc array and dereferences each arc's
 * tail and head nodes (irregular reads of node potentials), and to the tree
 * update, which walks the spanning tree's parent/child/sibling pointers.
 * This program does the same on a random transportation network: it keeps
 * a spanning tree of node structs linked by pointers, prices every arc
 * against the node potentials, and on each pivot re-hangs a subtree and
 * walks it to update the potentials. Deterministic: its own seeded
 * generator, no input files.
 *
 * usage: netflow NODES ARCS_PER_NODE PIVOTS SEED
 */
#include <stdio.h>
#include <stdlib.h>

#include "splitmix.h"

typedef struct node node;
typedef struct arc arc;

struct node {
    long potential;
    node *parent, *child, *sibling, *prev_sibling;
    arc *basic_arc;     /* the tree arc to the parent */
    long depth;
    int number;
};

struct arc {
    node *tail, *head;
    long cost;
    long flow;
    int ident;          /* 0 at lower bound, 1 basic, 2 at upper bound */
};


static void unlink_child(node *n) {
    if (n->prev_sibling)
        n->prev_sibling->sibling = n->sibling;
    else if (n->parent)
        n->parent->child = n->sibling;
    if (n->sibling)
        n->sibling->prev_sibling = n->prev_sibling;
    n->sibling = n->prev_sibling = NULL;
}

static void link_child(node *parent, node *n) {
    n->parent = parent;
    n->sibling = parent->child;
    n->prev_sibling = NULL;
    if (parent->child)
        parent->child->prev_sibling = n;
    parent->child = n;
}

static int in_subtree(node *root, node *n) {
    for (; n; n = n->parent)
        if (n == root)
            return 1;
    return 0;
}

/* Walk the subtree under `root` depth first through the child/sibling
 * pointers, shifting every potential by `delta`: mcf's update_tree. */
static long update_subtree(node *root, long delta) {
    long visited = 0;
    node *n = root;
    for (;;) {
        n->potential += delta;
        n->depth = n->parent ? n->parent->depth + 1 : 0;
        visited++;
        if (n->child) {
            n = n->child;
            continue;
        }
        while (n != root && !n->sibling)
            n = n->parent;
        if (n == root)
            return visited;
        n = n->sibling;
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: netflow NODES ARCS_PER_NODE PIVOTS SEED\n");
        return 2;
    }
    long n_nodes = atol(argv[1]), per_node = atol(argv[2]), pivots = atol(argv[3]);
    rng_state = strtoull(argv[4], NULL, 10);
    long n_arcs = n_nodes * per_node;
    node *nodes = calloc(n_nodes + 1, sizeof(node));
    arc *arcs = calloc(n_arcs + n_nodes, sizeof(arc));
    if (!nodes || !arcs)
        return 1;
    /* node 0 is the artificial root; every node starts hung from it */
    node *root = &nodes[0];
    for (long i = 1; i <= n_nodes; i++) {
        arc *a = &arcs[n_arcs + i - 1];
        a->tail = &nodes[i];
        a->head = root;
        a->cost = (long)(next_random() % 20000);
        a->ident = 1;
        nodes[i].number = (int)i;
        nodes[i].basic_arc = a;
        nodes[i].potential = a->cost;
        link_child(root, &nodes[i]);
        nodes[i].depth = 1;
    }
    for (long i = 0; i < n_arcs; i++) {
        arc *a = &arcs[i];
        a->tail = &nodes[1 + (long)(next_random() % n_nodes)];
        a->head = &nodes[1 + (long)(next_random() % n_nodes)];
        a->cost = (long)(next_random() % 10000);
    }
    long total_visited = 0, degenerate = 0, start = 0, group = 4096;
    for (long p = 0; p < pivots; p++) {
        /* pricing: scan a group of arcs from where the last pivot stopped
         * (mcf's multiple partial pricing), keep the most negative one */
        arc *best = NULL;
        long best_red = 0;
        for (long k = 0; k < group; k++) {
            arc *a = &arcs[(start + k) % n_arcs];
            if (a->ident == 1)
                continue;
            long red = a->cost - a->tail->potential + a->head->potential;
            if (a->ident == 2)
                red = -red;
            if (red < best_red) {
                best_red = red;
                best = a;
            }
        }
        start = (start + group) % n_arcs;
        if (!best) {
            degenerate++;
            continue;
        }
        /* pivot: the entering arc's tail subtree moves under its head, the
         * tail's old tree arc leaves the basis */
        node *t = best->tail, *h = best->head;
        if (in_subtree(t, h)) {
            best->ident = 2;
            degenerate++;
            continue;
        }
        t->basic_arc->ident = 0;
        t->basic_arc->flow = 0;
        unlink_child(t);
        link_child(h, t);
        t->basic_arc = best;
        best->ident = 1;
        best->flow += 1;
        total_visited += update_subtree(t, best_red);
    }
    long checksum = 0;
    for (long i = 1; i <= n_nodes; i++)
        checksum += nodes[i].potential ^ nodes[i].depth;
    printf("pivots %ld visited %ld degenerate %ld checksum %ld\n", pivots, total_visited, degenerate, checksum);
    free(nodes);
    free(arcs);
    return 0;
}
