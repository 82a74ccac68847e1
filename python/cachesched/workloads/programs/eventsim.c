/* eventsim: the suite's stand-in for SPEC CPU2006 471.omnetpp.
 *
 * omnetpp is a discrete-event simulation of a large Ethernet network: its
 * time goes to the future-event set (a binary heap of message pointers), to
 * message objects allocated and freed by the million, and to the state of
 * the modules a message visits. This program simulates a random network of
 * queueing stations the same way: every event is a heap-allocated message,
 * the event set is a binary heap of pointers ordered by time, and handling
 * a message updates its station's FIFO queue (a linked list of messages)
 * and statistics, then schedules new messages to random neighbours.
 * Deterministic: its own seeded generator, no input files.
 *
 * usage: eventsim STATIONS NEIGHBOURS EVENTS SEED
 */
#include <stdio.h>
#include <stdlib.h>

#include "splitmix.h"

typedef struct message message;

struct message {
    double time;
    message *next_in_queue;
    int source, destination, hops;
    long id;
    char payload[40];   /* omnetpp's messages carry headers and control info */
};

typedef struct {
    message *head, *tail;   /* waiting messages, FIFO */
    int busy;
    long served, dropped, queue_length;
    double busy_since, busy_time, delay_sum;
    int *neighbours;
} station;


static double uniform(void) {
    return (next_random() >> 11) * (1.0 / 9007199254740992.0);
}

/* The future-event set: a binary heap of message pointers by time. */
static message **heap;
static long heap_len, heap_cap;

static void schedule(message *m) {
    if (heap_len == heap_cap) {
        heap_cap *= 2;
        heap = realloc(heap, heap_cap * sizeof(message *));
    }
    long i = heap_len++;
    while (i > 0 && heap[(i - 1) / 2]->time > m->time) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = m;
}

static message *next_event(void) {
    message *top = heap[0], *last = heap[--heap_len];
    long i = 0;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= heap_len)
            break;
        if (c + 1 < heap_len && heap[c + 1]->time < heap[c]->time)
            c++;
        if (heap[c]->time >= last->time)
            break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = last;
    return top;
}

static long next_id;

static message *new_message(double time, int source, int destination, int hops) {
    message *m = malloc(sizeof(message));
    m->time = time;
    m->next_in_queue = NULL;
    m->source = source;
    m->destination = destination;
    m->hops = hops;
    m->id = next_id++;
    for (int k = 0; k < (int)sizeof m->payload; k++)
        m->payload[k] = (char)(m->id + k);
    return m;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: eventsim STATIONS NEIGHBOURS EVENTS SEED\n");
        return 2;
    }
    int n = atoi(argv[1]), degree = atoi(argv[2]);
    long events = atol(argv[3]);
    rng_state = strtoull(argv[4], NULL, 10);
    station *stations = calloc(n, sizeof(station));
    for (int s = 0; s < n; s++) {
        stations[s].neighbours = malloc(degree * sizeof(int));
        for (int k = 0; k < degree; k++)
            stations[s].neighbours[k] = (int)(next_random() % n);
    }
    heap_cap = 1024;
    heap = malloc(heap_cap * sizeof(message *));
    for (int s = 0; s < n; s++)
        schedule(new_message(uniform(), s, s, 0));
    double now = 0;
    long handled = 0, delivered = 0;
    while (handled < events && heap_len > 0) {
        message *m = next_event();
        now = m->time;
        handled++;
        station *st = &stations[m->destination];
        if (m->hops < 0) {
            /* a service completion: the station sends its head message on */
            message *done = st->head;
            st->head = done->next_in_queue;
            if (!st->head)
                st->tail = NULL;
            st->queue_length--;
            st->served++;
            st->delay_sum += now - done->time;
            if (done->hops >= 8 || uniform() < 0.1) {
                delivered++;
                free(done);
            } else {
                int to = st->neighbours[next_random() % degree];
                done->source = m->destination;
                done->destination = to;
                done->hops++;
                done->time = now + 0.01 + 0.1 * uniform();
                done->next_in_queue = NULL;
                schedule(done);
            }
            if (st->head) {
                m->time = now + 0.05 + 0.2 * uniform();
                schedule(m);
            } else {
                st->busy = 0;
                st->busy_time += now - st->busy_since;
                free(m);
            }
            continue;
        }
        /* an arrival: queue it (drop when full); start service if idle */
        if (st->queue_length >= 64) {
            st->dropped++;
            free(m);
        } else {
            m->time = now;
            if (st->tail)
                st->tail->next_in_queue = m;
            else
                st->head = m;
            st->tail = m;
            st->queue_length++;
            if (!st->busy) {
                st->busy = 1;
                st->busy_since = now;
                schedule(new_message(now + 0.05 + 0.2 * uniform(), m->destination, m->destination, -1));
            }
        }
        /* traffic sources: new messages keep the network loaded */
        if (uniform() < 0.5) {
            int from = (int)(next_random() % n);
            schedule(new_message(now + uniform(), from, stations[from].neighbours[0], 0));
        }
    }
    double busy = 0, delay = 0;
    long served = 0, dropped = 0;
    for (int s = 0; s < n; s++) {
        busy += stations[s].busy_time;
        delay += stations[s].delay_sum;
        served += stations[s].served;
        dropped += stations[s].dropped;
    }
    printf("events %ld delivered %ld served %ld dropped %ld mean delay %.4f busy %.1f\n", handled, delivered, served,
           dropped, served ? delay / served : 0.0, busy);
    return 0;
}
