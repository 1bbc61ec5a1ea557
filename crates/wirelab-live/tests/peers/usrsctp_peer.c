/*
 * usrsctp peer for wirelab's live tests: SCTP in user space (usrsctp, FreeBSD's stack),
 * carried over UDP (RFC 6951) on the tunneling port 9899.
 *
 *   usrsctp_peer server PORT              accept one association, read until SHUTDOWN
 *   usrsctp_peer client ADDR PORT BYTES STREAMS
 *                                         connect (remote encapsulation port 9899), send
 *                                         BYTES in 16 KiB messages round-robin over
 *                                         STREAMS streams, then SHUTDOWN
 *
 * The local tunneling port is 9899 unless USRSCTP_UDP_PORT says otherwise.
 * Prints one JSON line: bytes and messages per stream, how the association ended.
 * Build: cc -O2 -o usrsctp_peer usrsctp_peer.c -lusrsctp -lpthread
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <usrsctp.h>

#define TUNNEL_PORT 9899
#define MAX_STREAMS 16

static uint64_t stream_bytes[MAX_STREAMS];
static uint64_t stream_msgs[MAX_STREAMS];

static void finish(void) {
    for (int i = 0; i < 300 && usrsctp_finish() != 0; i++)
        usleep(10000);
}

static void print_result(const char *mode, int ok, const char *ended) {
    uint64_t total = 0;
    printf("{\"mode\": \"%s\", \"ok\": %s, \"ended\": \"%s\", \"streams\": [", mode, ok ? "true" : "false", ended);
    for (int i = 0; i < MAX_STREAMS; i++) {
        total += stream_bytes[i];
        printf("%s[%llu, %llu]", i ? ", " : "", (unsigned long long)stream_bytes[i], (unsigned long long)stream_msgs[i]);
    }
    printf("], \"bytes\": %llu}\n", (unsigned long long)total);
    fflush(stdout);
}

static int server(int port) {
    struct socket *ls = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!ls) { perror("usrsctp_socket"); return 1; }
    struct sctp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.se_assoc_id = SCTP_FUTURE_ASSOC;
    ev.se_on = 1;
    ev.se_type = SCTP_SHUTDOWN_EVENT;
    usrsctp_setsockopt(ls, IPPROTO_SCTP, SCTP_EVENT, &ev, sizeof ev);
    const int on = 1;
    usrsctp_setsockopt(ls, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (usrsctp_bind(ls, (struct sockaddr *)&a, sizeof a) < 0) { perror("usrsctp_bind"); return 1; }
    if (usrsctp_listen(ls, 1) < 0) { perror("usrsctp_listen"); return 1; }
    struct socket *s = usrsctp_accept(ls, NULL, NULL);
    if (!s) { perror("usrsctp_accept"); return 1; }
    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on);
    static char buf[1 << 16];
    const char *ended = "eof";
    for (;;) {
        struct sctp_rcvinfo rcv;
        socklen_t infolen = sizeof rcv;
        unsigned int infotype = 0;
        int flags = 0;
        struct sockaddr_in from;
        socklen_t fromlen = sizeof from;
        ssize_t n = usrsctp_recvv(s, buf, sizeof buf, (struct sockaddr *)&from, &fromlen, &rcv, &infolen, &infotype, &flags);
        if (n < 0) { ended = strerror(errno); break; }
        if (n == 0) break;
        if (flags & MSG_NOTIFICATION) {
            const union sctp_notification *nt = (const void *)buf;
            if (nt->sn_header.sn_type == SCTP_SHUTDOWN_EVENT) ended = "shutdown";
            continue;
        }
        int sid = (infotype == SCTP_RECVV_RCVINFO) ? rcv.rcv_sid : 0;
        if (sid >= MAX_STREAMS) sid = MAX_STREAMS - 1;
        stream_bytes[sid] += (uint64_t)n;
        if (flags & MSG_EOR) stream_msgs[sid]++;
    }
    print_result("server", 1, ended);
    usrsctp_close(s);
    usrsctp_close(ls);
    return 0;
}

static int client(const char *addr, int port, uint64_t bytes, int streams) {
    struct socket *s = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!s) { perror("usrsctp_socket"); return 1; }
    struct sctp_initmsg init;
    memset(&init, 0, sizeof init);
    init.sinit_num_ostreams = streams;
    init.sinit_max_instreams = MAX_STREAMS;
    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_INITMSG, &init, sizeof init);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) { fprintf(stderr, "bad address %s\n", addr); return 1; }
    /* RFC 6951: the peer's encapsulation port, per destination address */
    struct sctp_udpencaps enc;
    memset(&enc, 0, sizeof enc);
    memcpy(&enc.sue_address, &a, sizeof a);
    enc.sue_port = htons(TUNNEL_PORT);
    if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &enc, sizeof enc) < 0) { perror("SCTP_REMOTE_UDP_ENCAPS_PORT"); return 1; }
    if (usrsctp_connect(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("usrsctp_connect"); return 1; }
    static char msg[16384];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (char)(i % 251);
    uint64_t sent = 0;
    for (int k = 0; sent < bytes; k++) {
        size_t len = bytes - sent < sizeof msg ? (size_t)(bytes - sent) : sizeof msg;
        struct sctp_sndinfo snd;
        memset(&snd, 0, sizeof snd);
        snd.snd_sid = k % streams;
        ssize_t n = usrsctp_sendv(s, msg, len, NULL, 0, &snd, sizeof snd, SCTP_SENDV_SNDINFO, 0);
        if (n < 0) { perror("usrsctp_sendv"); print_result("client", 0, "send error"); return 1; }
        stream_bytes[snd.snd_sid] += (uint64_t)n;
        stream_msgs[snd.snd_sid]++;
        sent += (uint64_t)n;
    }
    usrsctp_shutdown(s, SHUT_WR);
    /* wait for the association to close: recv returns 0 after SHUTDOWN-ACK/COMPLETE */
    static char buf[4096];
    for (;;) {
        int flags = 0;
        struct sockaddr_in from;
        socklen_t fromlen = sizeof from;
        struct sctp_rcvinfo rcv;
        socklen_t infolen = sizeof rcv;
        unsigned int infotype = 0;
        ssize_t n = usrsctp_recvv(s, buf, sizeof buf, (struct sockaddr *)&from, &fromlen, &rcv, &infolen, &infotype, &flags);
        if (n <= 0) break;
    }
    print_result("client", 1, "shutdown");
    usrsctp_close(s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s server PORT | client ADDR PORT BYTES STREAMS\n", argv[0]);
        return 2;
    }
    /* the local tunneling port: 9899, or USRSCTP_UDP_PORT (two peers in one namespace) */
    const char *lp = getenv("USRSCTP_UDP_PORT");
    usrsctp_init(lp ? (uint16_t)atoi(lp) : TUNNEL_PORT, NULL, getenv("USRSCTP_DEBUG") ? (void (*)(const char *, ...))printf : NULL);
    usrsctp_sysctl_set_sctp_blackhole(0);
    int rc;
    if (strcmp(argv[1], "server") == 0) {
        rc = server(atoi(argv[2]));
    } else if (strcmp(argv[1], "client") == 0 && argc >= 6) {
        int streams = atoi(argv[5]);
        if (streams < 1 || streams > MAX_STREAMS) streams = 1;
        rc = client(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10), streams);
    } else {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    finish();
    return rc;
}
