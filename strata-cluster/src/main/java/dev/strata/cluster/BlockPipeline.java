package dev.strata.cluster;

import dev.strata.memory.Checksum64;
import dev.strata.memory.log.Log;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Supplier;

/**
 * The CLUSTER tier's data path: block reads ({@code GET}) and writes ({@code SET NX PX}) sent on
 * connections of Strata's own to the cluster's primaries, pipelined, each read's value landed in
 * its destinations by the socket read itself.
 *
 * <h2>Design note</h2>
 * A block read through a general client pays, per byte, the kernel's copy into the client's
 * receive buffers, the client's copy into its reply buffer and the landing copy into the
 * destinations, and per request a command object, a future and a hand-off between threads: about
 * five times the processor time of the kernel's copy alone for a 256 KiB block, on processors the
 * cluster's nodes may share. Here one thread ({@code strata-cluster-blocks}) owns a few connections
 * per primary ({@code tiers.cluster.connections-per-primary}, dialled as they are first needed)
 * and does all the input and output:
 * <ul>
 *   <li><b>Routing.</b> A key's hash slot is looked up in the cluster client's topology
 *       ({@link Partitions}, refreshed by that client on its schedule, on failover and when this
 *       pipeline sees a redirect or a broken connection): the topology has one owner. The
 *       request goes on the owner's connection with the fewest requests queued or awaiting
 *       replies: a primary sends a large value a slice per turn of its event loop to each
 *       connection with replies pending, so blocks spread over several connections come back in
 *       fewer turns than the same blocks queued on one.</li>
 *   <li><b>Writes.</b> A command's head, the staged value (its header and payload, built once by
 *       the write window) and its tail leave in one gathering write, several commands per system
 *       call; the value's buffer is retained while any of it is unwritten.</li>
 *   <li><b>Reads.</b> The reply's length line is read with a short read, then the value's 56-byte
 *       header; only a header that passes every check ({@link ClusterBlockFormat#checkHeader}) lets
 *       the payload be read straight into the destinations (a scattering read), after
 *       {@link ClusterBlockRead#beginLanding} took the read; the checksum is then computed over the
 *       destinations. A value that fails a check is read whole aside (its SHA-1 names it for a
 *       conditional delete); the reply of an abandoned read is skipped.</li>
 *   <li><b>Time.</b> Every request carries a deadline (the store's timeout). A request not yet
 *       sent fails at its deadline; a request sent fails at its deadline and its reply, when it
 *       comes, is skipped; a connection that moves no byte for a timeout while it has work, or
 *       that breaks, fails everything on it, and its node is not dialled again for 50 ms,
 *       doubling to 1 s while dialling fails. Meanwhile its requests fail at once, so a dead
 *       primary costs its slots only, never the others'.</li>
 * </ul>
 * Replies come back in the order of the requests on each connection (the protocol's pipelining);
 * {@code inFlight} holds the sent requests in that order.
 *
 * <p>Invariants: each request is answered exactly once (its future completed); a read's
 * destinations are written only between a successful {@link ClusterBlockRead#beginLanding} and
 * its {@link ClusterBlockRead#finishLanding}/{@link ClusterBlockRead#failLanding}; a staged
 * value's buffer is retained from the first byte written until the last, or until its
 * connection closed.
 *
 * <p>Threads: {@link #get}, {@link #set} and {@link #close} from any thread; everything else on
 * the pipeline's thread. Futures complete on the pipeline's thread.
 */
final class BlockPipeline implements AutoCloseable {
    /** A request the cluster failed, refused or did not answer in time. */
    static final class RequestFailure extends RuntimeException {
        final ClusterMetrics.ErrorKind kind;

        RequestFailure(ClusterMetrics.ErrorKind kind, String message) {
            super(message, null, false, false);
            this.kind = kind;
        }
    }

    private static final long MIN_BACKOFF_NANOS = 50_000_000L;     // first pause before a node is dialled again
    private static final long MAX_BACKOFF_NANOS = 1_000_000_000L;  // longest pause
    private static final long REFRESH_INTERVAL_NANOS = 1_000_000_000L; // topology refreshes asked at most this often
    private static final int LINE_READ = 80;        // bytes read for a reply's first line and a value's header at most
    private static final int MAX_LINE = 4096;       // longest reply line accepted
    private static final int WRITE_BATCH = 48;      // buffers handed to one gathering write at most

    private final Supplier<Partitions> topology;    // the cluster client's view of slots and primaries
    private final Runnable refreshTopology;         // asks the cluster client to refresh it (asynchronously)
    private final byte[] auth;                      // the AUTH command sent first on every connection; null: none
    private final long timeoutNanos;
    private final Selector selector;
    private final Thread thread;
    private final ConcurrentLinkedQueue<Request> submitted = new ConcurrentLinkedQueue<>();
    private final int connectionsPerPrimary;        // connections opened to each primary, >= 1
    private final Map<String, Node[]> primaries = new HashMap<>(); // "host:port" -> [connectionsPerPrimary] connections; pipeline thread
    private final List<Node> connections = new java.util.ArrayList<>(); // every connection of primaries; pipeline thread
    private final Map<RedisClusterNode, Node[]> byOwner = new java.util.IdentityHashMap<>(); // the topology's node objects -> connections; pipeline thread
    private final ByteBuffer scratch = ByteBuffer.allocateDirect(64 * 1024); // skipped reply bytes land here
    private long lastRefresh = System.nanoTime() - REFRESH_INTERVAL_NANOS;
    private volatile boolean closed;

    /**
     * @param user     the ACL user, or null for the default user
     * @param password the password, or null when the cluster has none
     * @param connectionsPerPrimary connections opened to each primary, at least 1 (checked by {@link ClusterSettings})
     */
    BlockPipeline(Supplier<Partitions> topology, Runnable refreshTopology, String user, String password, long timeoutNanos,
                  int connectionsPerPrimary) {
        this.connectionsPerPrimary = connectionsPerPrimary;
        this.topology = topology;
        this.refreshTopology = refreshTopology;
        this.auth = password == null ? null : user == null ? command("AUTH", password) : command("AUTH", user, password);
        this.timeoutNanos = timeoutNanos;
        try {
            this.selector = Selector.open();
        } catch (IOException e) {
            throw new IllegalStateException("cannot open a selector for the cluster's block connections: " + e.getMessage(), e);
        }
        this.thread = Thread.ofPlatform().daemon().name("strata-cluster-blocks").start(this::run);
    }

    /**
     * Reads the value of {@code key} for {@code read}: completes with its outcome once the reply
     * landed (or showed no value), or exceptionally with a {@link RequestFailure} (timeout, a
     * broken or refused connection, an error reply); then, if {@link ClusterBlockRead#abandon}
     * fails, the landing is under way and {@link ClusterBlockRead#landed} ends it.
     */
    CompletableFuture<ClusterBlockRead.Outcome> get(String key, ClusterBlockRead read) {
        Read r = new Read(key, read, System.nanoTime() + timeoutNanos);
        submit(r);
        return r.answer;
    }

    /**
     * Writes {@code value} under {@code key} if absent, expiring after {@code ttlMillis}:
     * completes with "OK" when written, null when the key existed, or exceptionally with a
     * {@link RequestFailure}. The value's buffer is read only while retained.
     */
    CompletableFuture<String> set(String key, ClusterValue.Staged value, long ttlMillis) {
        Write w = new Write(key, value, ttlMillis, System.nanoTime() + timeoutNanos);
        submit(w);
        return w.answer;
    }

    private void submit(Request r) {
        if (closed) {
            r.fail(ClusterMetrics.ErrorKind.UNAVAILABLE, "the cluster store is closed");
            return;
        }
        submitted.add(r);
        if (Thread.currentThread() != thread) { // the pipeline's own thread (a callback) drains the queue before it selects again
            selector.wakeup();
        }
        if (closed) { // close may have drained the queue before this request arrived
            drainSubmitted("the cluster store is closed");
        }
    }

    @Override
    public void close() {
        closed = true;
        selector.wakeup();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        drainSubmitted("the cluster store is closed");
    }

    private void drainSubmitted(String why) {
        Request r;
        while ((r = submitted.poll()) != null) {
            r.fail(ClusterMetrics.ErrorKind.UNAVAILABLE, why);
        }
    }

    // ---------------------------------------------------------------- the pipeline's thread

    private void run() {
        try {
            while (!closed) {
                long now = System.nanoTime();
                long wait = nextDeadline(now);
                selector.select(Math.max(1, wait / 1_000_000));
                now = System.nanoTime();
                for (SelectionKey k : selector.selectedKeys()) {
                    Node n = (Node) k.attachment();
                    if (k.isValid() && k.isConnectable()) {
                        n.finishConnect(now);
                    }
                    if (k.isValid() && k.isReadable()) {
                        n.readReplies(now);
                    }
                    if (k.isValid() && k.isWritable()) {
                        n.writeRequests(now);
                    }
                }
                selector.selectedKeys().clear();
                Request r;
                while ((r = submitted.poll()) != null) {
                    route(r, now);
                }
                for (Node n : connections) {
                    n.writeRequests(now);
                    n.expire(now);
                }
            }
        } catch (ClosedSelectorException e) {
            // closed under us: everything is failed below
        } catch (IOException | RuntimeException | Error e) {
            Log.warn("cluster", "the cluster's block connections stopped: " + e);
        } finally {
            closed = true;
            for (Node n : connections) {
                n.broken(ClusterMetrics.ErrorKind.UNAVAILABLE, "the cluster store is closed", System.nanoTime(), false);
            }
            drainSubmitted("the cluster store is closed");
            try {
                selector.close();
            } catch (IOException ignored) {
                // nothing left to release
            }
        }
    }

    /** Nanoseconds until the earliest deadline of any request, at most 100 ms. */
    private long nextDeadline(long now) {
        long wait = 100_000_000L;
        for (Node n : connections) {
            wait = Math.min(wait, firstDeadline(n.inFlight, now));
            wait = Math.min(wait, firstDeadline(n.unsent, now));
            if (n.hasWork()) {
                wait = Math.min(wait, n.lastProgress + timeoutNanos - now);
            }
        }
        return Math.max(0, wait);
    }

    /** Nanoseconds until the deadline of the first request in {@code q} not yet answered (deadlines grow along a queue). */
    private static long firstDeadline(ArrayDeque<Request> q, long now) {
        for (Request r : q) {
            if (!r.answered) {
                return r.deadline - now;
            }
        }
        return Long.MAX_VALUE;
    }

    private void route(Request r, long now) {
        RedisClusterNode owner = primaryOf(r.key);
        if (owner == null || owner.getUri() == null) {
            r.fail(ClusterMetrics.ErrorKind.UNAVAILABLE, "no primary serves the slot of " + r.key + " in the cluster's topology");
            askRefresh(now);
            return;
        }
        Node[] group = byOwner.get(owner);
        if (group == null) {
            if (byOwner.size() > 64) {
                byOwner.clear(); // entries of topologies replaced since
            }
            String address = owner.getUri().getHost() + ":" + owner.getUri().getPort();
            group = primaries.computeIfAbsent(address, a -> {
                Node[] g = new Node[connectionsPerPrimary];
                for (int i = 0; i < g.length; i++) {
                    g[i] = new Node(a, owner.getUri().getHost(), owner.getUri().getPort());
                    connections.add(g[i]);
                }
                return g;
            });
            byOwner.put(owner, group);
        }
        leastLoaded(group).accept(r, now);
    }

    /** The connection of {@code group} with the fewest requests queued or awaiting replies; the first of equals. */
    private static Node leastLoaded(Node[] group) {
        Node best = group[0];
        for (int i = 1; i < group.length; i++) {
            if (group[i].load() < best.load()) {
                best = group[i];
            }
        }
        return best;
    }

    private RedisClusterNode primaryOf(String key) {
        try {
            return topology.get().getMasterBySlot(SlotHash.getSlot(key));
        } catch (RuntimeException e) {
            return null; // no topology yet
        }
    }

    private void askRefresh(long now) {
        if (now - lastRefresh >= REFRESH_INTERVAL_NANOS) {
            lastRefresh = now;
            try {
                refreshTopology.run();
            } catch (RuntimeException e) {
                // the client refreshes on its own schedule too
            }
        }
    }

    /** A request: its command's bytes, its deadline, its answer. */
    private abstract static sealed class Request permits Read, Write, Auth {
        final String key;      // the cluster key; null for AUTH
        final long deadline;   // nanoTime after which it fails
        ByteBuffer[] out;      // the command's buffers still to write; null before the first byte
        boolean answered;      // its future was completed (the reply, when it comes, is skipped)

        Request(String key, long deadline) {
            this.key = key;
            this.deadline = deadline;
        }

        /** The command's buffers, made when it is about to be written; null: nothing to write any more. */
        abstract ByteBuffer[] encode();

        /** The command was written whole: resources held for the writing go. */
        void written() {
        }

        /** Answers with a failure (once). */
        abstract void fail(ClusterMetrics.ErrorKind kind, String message);
    }

    private static final class Read extends Request {
        final ClusterBlockRead read;
        final CompletableFuture<ClusterBlockRead.Outcome> answer = new CompletableFuture<>();

        Read(String key, ClusterBlockRead read, long deadline) {
            super(key, deadline);
            this.read = read;
        }

        @Override
        ByteBuffer[] encode() {
            return new ByteBuffer[] {ByteBuffer.wrap(command("GET", key))};
        }

        void complete(ClusterBlockRead.Outcome o) {
            if (!answered) {
                answered = true;
                answer.complete(o);
            }
        }

        @Override
        void fail(ClusterMetrics.ErrorKind kind, String message) {
            if (!answered) {
                answered = true;
                answer.completeExceptionally(new RequestFailure(kind, message));
            }
        }
    }

    private static final class Write extends Request {
        final ClusterValue.Staged value;
        final long ttlMillis;
        final CompletableFuture<String> answer = new CompletableFuture<>();
        boolean retained; // the value's buffer is held while its bytes are written

        Write(String key, ClusterValue.Staged value, long ttlMillis, long deadline) {
            super(key, deadline);
            this.value = value;
            this.ttlMillis = ttlMillis;
        }

        @Override
        ByteBuffer[] encode() {
            if (!value.tryRetain()) {
                return null; // the write already ended for its caller
            }
            retained = true;
            byte[] k = key.getBytes(StandardCharsets.UTF_8);
            byte[] ttl = Long.toString(ttlMillis).getBytes(StandardCharsets.US_ASCII);
            ByteBuffer head = ByteBuffer.wrap(ascii("*6\r\n$3\r\nSET\r\n$" + k.length + "\r\n" + key + "\r\n$" + value.length() + "\r\n"));
            ByteBuffer tail = ByteBuffer.wrap(ascii("\r\n$2\r\nNX\r\n$2\r\nPX\r\n$" + ttl.length + "\r\n" + ttlMillis + "\r\n"));
            return new ByteBuffer[] {head, value.buffer().asByteBuffer(), tail};
        }

        @Override
        void written() {
            if (retained) {
                retained = false;
                value.release();
            }
        }

        void complete(String reply) {
            if (!answered) {
                answered = true;
                answer.complete(reply);
            }
        }

        @Override
        void fail(ClusterMetrics.ErrorKind kind, String message) {
            written(); // a connection that failed writes nothing more from the buffer
            if (!answered) {
                answered = true;
                answer.completeExceptionally(new RequestFailure(kind, message));
            }
        }
    }

    /** The AUTH a connection sends first; its failure breaks the connection. */
    private final class Auth extends Request {
        Auth(long deadline) {
            super(null, deadline);
        }

        @Override
        ByteBuffer[] encode() {
            return new ByteBuffer[] {ByteBuffer.wrap(auth)};
        }

        @Override
        void fail(ClusterMetrics.ErrorKind kind, String message) {
            answered = true;
        }
    }

    /** One primary: its connection, its requests, the state of the reply being read. */
    private final class Node {
        private static final int LINE = 0;     // reading a reply's first line
        private static final int HEADER = 1;   // reading a value's header
        private static final int PAYLOAD = 2;  // landing a value's payload in the destinations
        private static final int WHOLE = 3;    // reading a value that failed a check, whole
        private static final int SKIP = 4;    // skipping bytes (a reply nobody waits for, the CRLF after a value)

        final String address;
        final InetSocketAddress socketAddress;
        final ArrayDeque<Request> unsent = new ArrayDeque<>();   // not yet written whole; the head may be under way
        final ArrayDeque<Request> inFlight = new ArrayDeque<>(); // written whole, awaiting replies in this order
        final ByteBuffer in = ByteBuffer.allocateDirect(MAX_LINE).flip(); // bytes read, not yet consumed (read mode)
        final ByteBuffer header = ByteBuffer.allocateDirect(ClusterBlockFormat.HEADER_BYTES);
        final ByteBuffer[] gather = new ByteBuffer[WRITE_BATCH];
        SocketChannel channel;
        SelectionKey selection;
        boolean connected;
        long lastProgress;   // nanoTime a byte last moved, or the connection began
        long downUntil;      // nanoTime before which the node is not dialled
        long backoff = MIN_BACKOFF_NANOS;
        // the reply being read
        int phase = LINE;
        long valueBytes;     // bytes of the value being read
        long remaining;      // bytes of the current phase still to read (PAYLOAD, WHOLE, SKIP)
        ByteBuffer[] landing; // PAYLOAD: the destinations, as buffers
        int landingAt;       // PAYLOAD: first destination with room
        List<MemorySegment> landingSegments; // PAYLOAD: the destinations
        int summed;          // PAYLOAD: bytes of destination landingAt (or the one before it) already summed
        final Checksum64 sum = new Checksum64(); // PAYLOAD: the checksum of the bytes landed so far
        ByteBuffer whole;    // WHOLE: the value, header first
        ClusterBlockRead.Outcome outcome; // the read's outcome, answered after the value's CRLF
        boolean ownsLanding; // the read was taken with beginLanding

        Node(String address, String host, int port) {
            this.address = address;
            this.socketAddress = new InetSocketAddress(host, port);
        }

        boolean hasWork() {
            return !unsent.isEmpty() || !inFlight.isEmpty();
        }

        /** Requests queued or awaiting replies on this connection. */
        int load() {
            return unsent.size() + inFlight.size();
        }

        void accept(Request r, long now) {
            if (!hasWork()) {
                lastProgress = now; // an idle connection's clock starts with its first request
            }
            if (channel == null) {
                if (now < downUntil) {
                    r.fail(ClusterMetrics.ErrorKind.UNAVAILABLE, "node " + address + " is not connected (it failed "
                            + (downUntil - now) / 1_000_000 + " ms ago or less)");
                    return;
                }
                dial(now);
                if (channel == null) {
                    r.fail(ClusterMetrics.ErrorKind.UNAVAILABLE, "node " + address + " cannot be reached");
                    return;
                }
            }
            unsent.add(r);
        }

        private void dial(long now) {
            try {
                channel = SocketChannel.open();
                channel.configureBlocking(false);
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                connected = channel.connect(socketAddress);
                selection = channel.register(selector, connected ? SelectionKey.OP_READ : SelectionKey.OP_CONNECT, this);
                lastProgress = now;
                phase = LINE;
                in.clear().flip();
                if (auth != null) {
                    unsent.addFirst(new Auth(now + timeoutNanos));
                }
            } catch (IOException e) {
                closeChannel();
                down(now);
            }
        }

        void finishConnect(long now) {
            try {
                if (channel.finishConnect()) {
                    connected = true;
                    lastProgress = now;
                    selection.interestOps(SelectionKey.OP_READ);
                    if (auth == null) {
                        backoff = MIN_BACKOFF_NANOS;
                    }
                }
            } catch (IOException e) {
                broken(ClusterMetrics.ErrorKind.UNAVAILABLE, "node " + address + " refused the connection (" + e.getMessage() + ")", now,
                        true);
            }
        }

        /** Writes as much of the unsent requests as the socket takes, several per system call. */
        void writeRequests(long now) {
            if (channel == null || !connected || unsent.isEmpty()) {
                return;
            }
            try {
                while (!unsent.isEmpty()) {
                    int count = 0;
                    for (Request r : unsent) {
                        if (r.out == null) {
                            if (r.answered && !(r instanceof Auth)) {
                                continue; // timed out before its first byte: dropped below
                            }
                            r.out = r.encode();
                            if (r.out == null) {
                                r.answered = true;
                                continue;
                            }
                        }
                        for (ByteBuffer b : r.out) {
                            if (b.hasRemaining()) {
                                if (count == WRITE_BATCH) {
                                    break;
                                }
                                gather[count++] = b;
                            }
                        }
                        if (count == WRITE_BATCH) {
                            break;
                        }
                    }
                    long wrote = count == 0 ? 0 : channel.write(gather, 0, count);
                    java.util.Arrays.fill(gather, 0, count, null);
                    if (wrote > 0) {
                        lastProgress = now;
                    }
                    boolean moved = false;
                    while (!unsent.isEmpty()) {
                        Request r = unsent.peek();
                        if (r.out == null) {
                            if (!r.answered) {
                                break; // not gathered yet (the batch was full)
                            }
                            unsent.poll(); // ended before its first byte: nothing of it is on the wire
                            moved = true;
                            continue;
                        }
                        if (remaining(r.out) > 0) {
                            break;
                        }
                        unsent.poll();
                        r.written();
                        inFlight.add(r);
                        moved = true;
                    }
                    if (!moved && wrote == 0) {
                        break; // the socket is full
                    }
                }
                int ops = unsent.isEmpty() ? SelectionKey.OP_READ : SelectionKey.OP_READ | SelectionKey.OP_WRITE;
                if (selection.interestOps() != ops) {
                    selection.interestOps(ops);
                }
            } catch (IOException e) {
                broken(ClusterMetrics.ErrorKind.UNAVAILABLE, "writing to node " + address + " failed (" + e.getMessage() + ")", now, true);
            }
        }

        /** Reads and handles every reply the socket has now. */
        void readReplies(long now) {
            try {
                while (channel != null) {
                    if (!step(now)) {
                        return;
                    }
                }
            } catch (IOException e) {
                broken(ClusterMetrics.ErrorKind.UNAVAILABLE, "reading from node " + address + " failed (" + e.getMessage() + ")", now,
                        true);
            } catch (ProtocolError e) {
                broken(ClusterMetrics.ErrorKind.OTHER, "node " + address + " sent a reply this store cannot read: " + e.getMessage(), now,
                        true);
            }
        }

        /** Advances the reply being read; false when the socket has nothing more now. */
        private boolean step(long now) throws IOException {
            switch (phase) {
                case LINE -> {
                    int end = lineEnd();
                    if (end < 0) {
                        if (in.remaining() >= MAX_LINE - 2) {
                            throw new ProtocolError("a reply line longer than " + MAX_LINE + " bytes");
                        }
                        return fill(LINE_READ, now);
                    }
                    line(end, now);
                    return true;
                }
                case HEADER -> {
                    int filled = fillUp(header, now);
                    if (filled <= 0) {
                        return filled == 0;
                    }
                    header.flip();
                    valueHeaderRead();
                    return true;
                }
                case PAYLOAD -> {
                    int before = landingAt;
                    while (in.hasRemaining() && remaining > 0) {
                        ByteBuffer d = landing[landingAt];
                        int n = (int) Math.min(Math.min(in.remaining(), d.remaining()), remaining);
                        ByteBuffer part = in.slice(in.position(), n);
                        d.put(part);
                        in.position(in.position() + n);
                        remaining -= n;
                        if (!d.hasRemaining()) {
                            landingAt++;
                        }
                    }
                    sumLanded(before);
                    if (remaining > 0) {
                        before = landingAt;
                        long got = channel.read(landing, landingAt, landing.length - landingAt);
                        if (!progressed(got, now)) {
                            return false;
                        }
                        remaining -= got;
                        while (landingAt < landing.length && !landing[landingAt].hasRemaining()) {
                            landingAt++;
                        }
                        sumLanded(before);
                        if (remaining > 0) {
                            return true;
                        }
                    }
                    payloadLanded();
                    return true;
                }
                case WHOLE -> {
                    int filled = fillUp(whole, now);
                    if (filled <= 0) {
                        return filled == 0;
                    }
                    Read r = (Read) inFlight.peek();
                    whole.flip();
                    ClusterMetrics.Corruption bad = ClusterBlockFormat.checkHeader(MemorySegment.ofBuffer(whole), valueBytes, r.read.key(),
                            r.read.geometry(), r.read.payloadBytes());
                    outcome = new ClusterBlockRead.Outcome(false, bad == null ? ClusterMetrics.Corruption.SHORT : bad, (int) valueBytes,
                            ClusterBlockRead.sha1Hex(whole.duplicate()));
                    whole = null;
                    skip(2);
                    return true;
                }
                case SKIP -> {
                    int n = (int) Math.min(in.remaining(), remaining);
                    in.position(in.position() + n);
                    remaining -= n;
                    if (remaining > 0 && remaining <= LINE_READ / 2) { // a value's CRLF: read with the next reply's line
                        return fill(LINE_READ, now);
                    }
                    while (remaining > 0) {
                        scratch.clear().limit((int) Math.min(scratch.capacity(), remaining));
                        int got = channel.read(scratch);
                        if (!progressed(got, now)) {
                            return false;
                        }
                        remaining -= got;
                    }
                    replyEnded();
                    return true;
                }
                default -> throw new IllegalStateException("phase " + phase);
            }
        }

        /**
         * Fills {@code target} from the bytes already read, then from the socket.
         *
         * @return 1 when it is full, 0 when it got bytes and has room left, -1 when the socket had none
         */
        private int fillUp(ByteBuffer target, long now) throws IOException {
            moveFromIn(target);
            if (target.hasRemaining() && !progressed(channel.read(target), now)) {
                return -1;
            }
            return target.hasRemaining() ? 0 : 1;
        }

        /**
         * Accounts a socket read of {@code got} bytes: false when it got none now; the connection's
         * clock moves when it got some.
         *
         * @throws IOException when the node closed the connection
         */
        private boolean progressed(long got, long now) throws IOException {
            if (got < 0) {
                throw new IOException("the node closed the connection");
            }
            if (got > 0) {
                lastProgress = now;
            }
            return got > 0;
        }

        /** Reads into {@code in} at most {@code max} more bytes; false when nothing came. */
        private boolean fill(int max, long now) throws IOException {
            in.compact();
            int limit = in.limit();
            in.limit(Math.min(limit, in.position() + max));
            int got;
            try {
                got = channel.read(in);
            } finally {
                in.limit(limit);
                in.flip();
            }
            return progressed(got, now);
        }

        private int lineEnd() {
            for (int i = in.position(); i + 1 < in.limit(); i++) {
                if (in.get(i) == '\r' && in.get(i + 1) == '\n') {
                    return i;
                }
            }
            return -1;
        }

        /** Handles a reply's first line, {@code in}'s bytes up to {@code end} (its CR). */
        private void line(int end, long now) {
            byte type = in.get(in.position());
            String text = StandardCharsets.US_ASCII.decode(in.slice(in.position() + 1, end - in.position() - 1)).toString();
            in.position(end + 2);
            Request r = inFlight.peek();
            if (r == null) {
                throw new ProtocolError("a reply with no request waiting for it: " + (char) type + text);
            }
            switch (type) {
                case '+' -> {
                    if (r instanceof Write w) {
                        w.complete(text);
                    } else if (r instanceof Auth) {
                        backoff = MIN_BACKOFF_NANOS; // the node took the credentials: the next failure pauses briefly again
                    }
                    replyEnded();
                }
                case '-' -> {
                    errorReply(r, text, now);
                }
                case '$' -> {
                    long length = parseLength(text);
                    if (length < 0) {
                        if (r instanceof Read rd) {
                            rd.complete(ClusterBlockRead.Outcome.ABSENT);
                        } else if (r instanceof Write w) {
                            w.complete(null); // SET NX: the key existed
                        }
                        replyEnded();
                    } else if (r instanceof Read rd && !rd.answered) {
                        valueBytes = length;
                        if (length < ClusterBlockFormat.HEADER_BYTES) {
                            readWhole(length);
                        } else {
                            header.clear();
                            phase = HEADER;
                        }
                    } else {
                        skip(length + 2);
                    }
                }
                default -> throw new ProtocolError("a reply of type '" + (char) type + "' to " + r.getClass().getSimpleName());
            }
        }

        private void errorReply(Request r, String text, long now) {
            if (r instanceof Auth) {
                ClusterMetrics.ErrorKind kind = text.startsWith("WRONGPASS") || text.startsWith("NOAUTH") || text.contains("password")
                        ? ClusterMetrics.ErrorKind.AUTH : ClusterMetrics.ErrorKind.OTHER;
                inFlight.poll();
                broken(kind, "node " + address + " refused the credentials: " + text, now, true);
                return;
            }
            ClusterMetrics.ErrorKind kind = ClusterMetrics.ErrorKind.OTHER;
            if (text.startsWith("MOVED") || text.startsWith("ASK") || text.startsWith("CLUSTERDOWN") || text.startsWith("TRYAGAIN")
                    || text.startsWith("LOADING") || text.startsWith("MASTERDOWN")) {
                kind = ClusterMetrics.ErrorKind.UNAVAILABLE;
                askRefresh(now);
            } else if (text.startsWith("NOAUTH") || text.startsWith("WRONGPASS")) {
                kind = ClusterMetrics.ErrorKind.AUTH;
            }
            r.fail(kind, "node " + address + " answered " + text);
            replyEnded();
        }

        private long parseLength(String text) {
            try {
                return Long.parseLong(text);
            } catch (NumberFormatException e) {
                throw new ProtocolError("a bulk length of '" + text + "'");
            }
        }

        private void readWhole(long length) {
            whole = ByteBuffer.allocate((int) length);
            phase = WHOLE;
        }

        /** The value's header is in {@code header}: land the payload, read the value aside, or skip it. */
        private void valueHeaderRead() {
            Read r = (Read) inFlight.peek();
            if (r.answered || !r.read.beginLanding()) {
                skip(valueBytes - ClusterBlockFormat.HEADER_BYTES + 2); // abandoned by its caller: the destinations are not ours
                return;
            }
            ownsLanding = true;
            MemorySegment h = MemorySegment.ofBuffer(header);
            ClusterMetrics.Corruption bad = ClusterBlockFormat.checkHeader(h, valueBytes, r.read.key(), r.read.geometry(),
                    r.read.payloadBytes());
            if (bad != null) {
                if (valueBytes > Integer.MAX_VALUE - 8) {
                    outcome = new ClusterBlockRead.Outcome(false, bad, Integer.MAX_VALUE, null);
                    skip(valueBytes - ClusterBlockFormat.HEADER_BYTES + 2);
                    return;
                }
                readWhole(valueBytes);
                whole.put(header.duplicate());
                return;
            }
            List<MemorySegment> ds = r.read.destinations();
            landing = new ByteBuffer[ds.size()];
            for (int i = 0; i < landing.length; i++) {
                landing[i] = ds.get(i).asByteBuffer();
            }
            landingSegments = ds;
            landingAt = 0;
            summed = 0;
            sum.reset();
            remaining = valueBytes - ClusterBlockFormat.HEADER_BYTES;
            phase = PAYLOAD;
        }

        /**
         * Adds to the checksum the bytes that landed since the last call, in destinations
         * {@code from}.. (while they are still in the processor's caches).
         */
        private void sumLanded(int from) {
            for (int i = from; i < landing.length; i++) {
                int end = landing[i].position();
                if (end > summed) {
                    sum.update(landingSegments.get(i), summed, end - summed);
                }
                if (end < landing[i].limit()) {
                    summed = end;
                    return;
                }
                summed = 0;
            }
        }

        /** The payload is in the destinations and summed: its checksum decides the outcome. */
        private void payloadLanded() {
            Read r = (Read) inFlight.peek();
            if (sum.value() == ClusterBlockFormat.checksumOf(MemorySegment.ofBuffer(header))) {
                outcome = new ClusterBlockRead.Outcome(true, null, (int) valueBytes, null);
            } else {
                outcome = new ClusterBlockRead.Outcome(false, ClusterMetrics.Corruption.CHECKSUM, (int) valueBytes,
                        sha1Hex(header, r.read.destinations()));
            }
            landing = null;
            landingSegments = null;
            skip(2);
        }

        private void skip(long bytes) {
            remaining = bytes;
            phase = SKIP;
        }

        /** The head request's reply was read whole: answer it and go on with the next. */
        private void replyEnded() {
            Request r = inFlight.poll();
            phase = LINE;
            ClusterBlockRead.Outcome o = outcome;
            outcome = null;
            if (r instanceof Read rd) {
                if (ownsLanding) {
                    ownsLanding = false;
                    rd.read.finishLanding(o);
                }
                if (o != null) {
                    rd.complete(o); // no-op when it was answered already (ABSENT, an error, its deadline)
                }
            }
        }

        private void moveFromIn(ByteBuffer target) {
            int n = Math.min(in.remaining(), target.remaining());
            if (n > 0) {
                target.put(in.slice(in.position(), n));
                in.position(in.position() + n);
            }
        }

        /** Fails the requests past their deadline, and the connection when it moved nothing for a timeout while it had work. */
        void expire(long now) {
            if (channel != null && hasWork() && now - lastProgress > timeoutNanos) {
                broken(ClusterMetrics.ErrorKind.TIMEOUT, "node " + address + " moved no byte for " + timeoutNanos / 1_000_000 + " ms", now,
                        true);
                return;
            }
            for (Request r : inFlight) {
                if (r.deadline - now > 0) {
                    break;
                }
                if (!(r == inFlight.peek() && ownsLanding)) {
                    r.fail(ClusterMetrics.ErrorKind.TIMEOUT, "node " + address + " did not answer within " + timeoutNanos / 1_000_000 + " ms");
                }
            }
            for (Request r : unsent) {
                if (r.deadline - now > 0) {
                    break;
                }
                if (r.out == null) { // nothing of it written: it goes with the next write
                    r.fail(ClusterMetrics.ErrorKind.TIMEOUT, "node " + address + " took no request for " + timeoutNanos / 1_000_000 + " ms");
                }
            }
        }

        /** Closes the connection and fails everything on it; the node is dialled again after a pause. */
        void broken(ClusterMetrics.ErrorKind kind, String why, long now, boolean refresh) {
            if (ownsLanding) {
                Read r = (Read) inFlight.peek();
                ownsLanding = false;
                r.read.failLanding(new RequestFailure(kind, why));
                r.fail(kind, why);
            }
            for (Request r : inFlight) {
                r.fail(kind, why);
            }
            for (Request r : unsent) {
                r.fail(kind, why);
            }
            inFlight.clear();
            unsent.clear();
            landing = null;
            whole = null;
            outcome = null;
            phase = LINE;
            closeChannel();
            down(now);
            if (refresh) {
                askRefresh(now);
            }
        }

        private void down(long now) {
            downUntil = now + backoff;
            backoff = Math.min(MAX_BACKOFF_NANOS, backoff * 2);
        }

        private void closeChannel() {
            connected = false;
            if (selection != null) {
                selection.cancel();
                selection = null;
            }
            if (channel != null) {
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // closing anyway
                }
                channel = null;
            }
        }
    }

    /** A reply that is not what the request's protocol allows. */
    private static final class ProtocolError extends RuntimeException {
        ProtocolError(String message) {
            super(message, null, false, false);
        }
    }

    private static long remaining(ByteBuffer[] buffers) {
        long n = 0;
        for (ByteBuffer b : buffers) {
            n += b.remaining();
        }
        return n;
    }

    /** A command of bulk-string arguments in the protocol's array form. */
    static byte[] command(String... args) {
        StringBuilder s = new StringBuilder().append('*').append(args.length).append("\r\n");
        for (String a : args) {
            byte[] b = a.getBytes(StandardCharsets.UTF_8);
            s.append('$').append(b.length).append("\r\n").append(a).append("\r\n");
        }
        return s.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** The hex SHA-1 of a value read as its header and its payload's pieces. */
    private static String sha1Hex(ByteBuffer header, List<MemorySegment> payload) {
        try {
            MessageDigest sha1 = MessageDigest.getInstance("SHA-1");
            sha1.update(header.duplicate().rewind());
            for (MemorySegment m : payload) {
                sha1.update(m.asByteBuffer());
            }
            return HexFormat.of().formatHex(sha1.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-1", e);
        }
    }
}
