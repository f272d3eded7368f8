/*
 * delay_proxy — a TCP proxy that delays each direction by a fixed time, to put a network between
 * the worker and PostgreSQL in `scripts/bench` (phase `network`). On loopback a round trip costs
 * ~0.05 ms, which hides how many round trips a step needs; through this proxy each round trip costs
 * at least twice the delay, as on a network.
 *
 *   delay_proxy LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_US
 *
 * Listens on 127.0.0.1:LISTEN_PORT (0: any free port), prints "READY <port>" on stdout, then for
 * each connection opens one to TARGET and forwards both directions. Every chunk read is written
 * DELAY_US microseconds after it arrived (CLOCK_MONOTONIC, absolute sleeps), in order; reading goes
 * on meanwhile, so pipelined traffic is delayed, not serialised. A direction holds at most
 * MAX_QUEUED bytes in flight (then its reader waits): memory stays bounded. Runs until killed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define MAX_QUEUED (8 * 1024 * 1024)

struct chunk {
    struct chunk *next;
    struct timespec due;
    size_t length; /* 0: end of stream */
    char data[];
};

/* One direction: a reader thread queues chunks, a writer thread sends each when due. */
struct direction {
    int from, to;
    long delay_ns;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct chunk *head, *tail;
    size_t queued;
    int writer_failed;
    struct connection *connection;
};

struct connection {
    struct direction up, down;
    pthread_mutex_t lock;
    int finished; /* threads (two readers, two writers) that ended */
};

static void add_ns(struct timespec *t, long ns) {
    t->tv_nsec += ns;
    while (t->tv_nsec >= 1000000000L) {
        t->tv_nsec -= 1000000000L;
        t->tv_sec += 1;
    }
}

static void push(struct direction *d, struct chunk *c) {
    pthread_mutex_lock(&d->lock);
    while (d->queued + c->length > MAX_QUEUED && d->head && !d->writer_failed) pthread_cond_wait(&d->changed, &d->lock);
    c->next = NULL;
    if (d->tail) d->tail->next = c; else d->head = c;
    d->tail = c;
    d->queued += c->length;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
}

static void finish(struct connection *c);

static void *reader(void *argument) {
    struct direction *d = argument;
    for (;;) {
        struct chunk *c = malloc(sizeof(struct chunk) + CHUNK);
        if (!c) abort();
        ssize_t n = recv(d->from, c->data, CHUNK, 0);
        if (n < 0 && errno == EINTR) { free(c); continue; }
        clock_gettime(CLOCK_MONOTONIC, &c->due);
        add_ns(&c->due, d->delay_ns);
        c->length = n > 0 ? (size_t)n : 0;
        push(d, c);
        pthread_mutex_lock(&d->lock);
        int failed = d->writer_failed;
        pthread_mutex_unlock(&d->lock);
        if (n <= 0 || failed) {
            finish(d->connection);
            return NULL;
        }
    }
}

static int send_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t n = send(fd, data, length, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        data += n;
        length -= (size_t)n;
    }
    return 0;
}

static void *writer(void *argument) {
    struct direction *d = argument;
    for (;;) {
        pthread_mutex_lock(&d->lock);
        while (!d->head) pthread_cond_wait(&d->changed, &d->lock);
        struct chunk *c = d->head;
        d->head = c->next;
        if (!d->head) d->tail = NULL;
        d->queued -= c->length;
        pthread_cond_broadcast(&d->changed);
        pthread_mutex_unlock(&d->lock);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &c->due, NULL) == EINTR) {}
        int end = c->length == 0;
        int failed = end ? 0 : send_all(d->to, c->data, c->length);
        free(c);
        if (end || failed) {
            shutdown(d->to, SHUT_WR);
            if (failed) {
                pthread_mutex_lock(&d->lock);
                d->writer_failed = 1;
                pthread_cond_broadcast(&d->changed);
                pthread_mutex_unlock(&d->lock);
                shutdown(d->from, SHUT_RD); /* ends the reader */
            }
            finish(d->connection);
            return NULL;
        }
    }
}

static void drop_queue(struct direction *d) {
    while (d->head) {
        struct chunk *c = d->head;
        d->head = c->next;
        free(c);
    }
}

/* The last of the four threads to end closes the sockets and frees the connection. */
static void finish(struct connection *c) {
    pthread_mutex_lock(&c->lock);
    int done = ++c->finished == 4;
    pthread_mutex_unlock(&c->lock);
    if (!done) return;
    close(c->up.from);
    close(c->up.to);
    drop_queue(&c->up);
    drop_queue(&c->down);
    free(c);
}

static void start_direction(struct direction *d, struct connection *c, int from, int to, long delay_ns) {
    d->from = from;
    d->to = to;
    d->delay_ns = delay_ns;
    d->connection = c;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->changed, NULL);
    pthread_t r, w;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 256 * 1024);
    if (pthread_create(&r, &attributes, reader, d) || pthread_create(&w, &attributes, writer, d)) {
        perror("delay_proxy: pthread_create");
        exit(1);
    }
    pthread_attr_destroy(&attributes);
}

static int connect_target(const char *host, const char *port) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *found;
    if (getaddrinfo(host, port, &hints, &found) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *a = found; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(found);
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: delay_proxy LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_US\n");
        return 2;
    }
    long delay_us = strtol(argv[4], NULL, 10);
    if (delay_us < 0 || delay_us > 10000000) {
        fprintf(stderr, "delay_proxy: DELAY_US must be 0..10000000, got %s\n", argv[4]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 512)
        || getsockname(listener, (struct sockaddr *)&address, &length)) {
        perror("delay_proxy: listen");
        return 1;
    }
    printf("READY %d\n", ntohs(address.sin_port));
    fflush(stdout);
    for (;;) {
        int client = accept(listener, NULL, NULL);
        if (client < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            perror("delay_proxy: accept");
            return 1;
        }
        int server = connect_target(argv[2], argv[3]);
        if (server < 0) {
            fprintf(stderr, "delay_proxy: cannot connect to %s:%s\n", argv[2], argv[3]);
            close(client);
            continue;
        }
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct connection *c = calloc(1, sizeof *c);
        if (!c) abort();
        pthread_mutex_init(&c->lock, NULL);
        start_direction(&c->up, c, client, server, delay_us * 1000L);
        start_direction(&c->down, c, server, client, delay_us * 1000L);
    }
}
