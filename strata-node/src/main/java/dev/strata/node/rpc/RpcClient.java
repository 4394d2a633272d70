package dev.strata.node.rpc;

import static dev.strata.node.rpc.RpcRegionLayout.*;

import dev.strata.memory.shm.ProcessLiveness;
import dev.strata.memory.shm.ShmFiles;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The client side of RPC over shared memory: one channel of a region (layout in
 * {@link RpcRegionLayout}), a ring of request/response slots.
 *
 * <p>Use: {@link #post} writes a request into the next slot and returns its sequence number at
 * once; {@link #await} waits for the oldest outstanding response. Up to {@link #capacity()}
 * requests may be posted before waiting (batching: the server answers all of them in one pass);
 * {@link #call} is post then await. Nothing is allocated per request.
 *
 * <p>Waiting spins, then yields, then parks with a growing bound ({@link Backoff}); past the spin
 * phase it checks every {@code serverCheckInterval} that the server still lives (state, pid and
 * start time, heartbeat), so a dead or stopped server is reported as a status
 * ({@link RpcStatus#SERVER_DEAD}, {@link RpcStatus#SERVER_STOPPED},
 * {@link RpcStatus#SERVER_UNRESPONSIVE}) and never hangs the caller. Once the server is lost, every
 * later call returns that status at once.
 *
 * <p>Threads: confined: one thread at a time (callers sharing a client lock around it).
 */
public final class RpcClient implements AutoCloseable {
    private final Path path;
    private final RpcClientOptions options;
    private final Arena arena;
    private final MemorySegment region;
    private final Geometry geometry;
    private final int channel;
    private final long channelOffset;
    private final long incarnation;
    private final long pid;
    private final int mask;
    private final long[] slotOffsets;
    private final MemorySegment[] requestPayloads;
    private final MemorySegment[] responsePayloads;
    private final long serverPid;
    private final long serverStartMillis;
    private final Backoff backoff;
    private final long checkIntervalNanos;
    private long posted;   // requests posted so far
    private long consumed; // responses taken so far
    private int lost;      // 0, or the status saying the server is gone for good
    private boolean closed;

    private RpcClient(Path path, RpcClientOptions options, Arena arena, MemorySegment region, Geometry geometry,
                      int channel, long incarnation, Header header) {
        this.path = path;
        this.options = options;
        this.arena = arena;
        this.region = region;
        this.geometry = geometry;
        this.channel = channel;
        this.channelOffset = geometry.channelOffset(channel);
        this.incarnation = incarnation;
        this.pid = ProcessHandle.current().pid();
        int slots = geometry.slotsPerChannel();
        this.mask = slots - 1;
        this.slotOffsets = new long[slots];
        this.requestPayloads = new MemorySegment[slots];
        this.responsePayloads = new MemorySegment[slots];
        for (int s = 0; s < slots; s++) {
            long slot = geometry.slotOffset(channel, s);
            slotOffsets[s] = slot;
            requestPayloads[s] = region.asSlice(slot + REQUEST_PAYLOAD_OFFSET, geometry.payloadBytes());
            responsePayloads[s] = region.asSlice(slot + geometry.responsePayloadOffset(), geometry.payloadBytes());
        }
        this.serverPid = header.prefix().ownerPid();
        this.serverStartMillis = header.prefix().ownerStartMillis();
        this.backoff = new Backoff(options.spins(), 50, 1_000, options.maxPark().toNanos());
        this.checkIntervalNanos = options.serverCheckInterval().toNanos();
    }

    /** Attaches to the region at {@code path} with default options. */
    public static RpcClient attach(Path path) {
        return attach(path, RpcClientOptions.defaults());
    }

    /**
     * Attaches to the region at {@code path}: checks it, checks that its server lives, and claims
     * a free channel.
     *
     * @throws RpcUnavailableException if there is no region, its server is dead or stopped, or no
     *                                 channel came free within the attach timeout
     * @throws ShmFormatException      if the file is not a region this code can speak to
     */
    public static RpcClient attach(Path path, RpcClientOptions options) {
        long deadline = System.nanoTime() + options.attachTimeout().toNanos();
        // header and mapping come from one open file: a server restarting meanwhile renames a new
        // region over the path, and this client must not mix the old header with the new file
        try (FileChannel ch = openRegion(path)) {
            Header header = awaitHeader(path, ch, deadline);
            Geometry g = header.validate(path);
            checkServable(path, header);
            return attach(path, options, ch, header, g, deadline);
        } catch (IOException e) {
            throw new UncheckedIOException("reading rpc region " + path, e);
        }
    }

    private static FileChannel openRegion(Path path) throws IOException {
        try {
            ShmFiles.requireAttachable(path);
            return FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (NoSuchFileException e) {
            throw new RpcUnavailableException(path, "no region file: is the server (strata node) running with this rpc path?");
        }
    }

    private static RpcClient attach(Path path, RpcClientOptions options, FileChannel ch, Header header, Geometry g,
                                    long deadline) {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment region = ShmFiles.mapReadWrite(ch, g.totalSize(), arena);
            long me = ProcessLiveness.currentPid();
            long myStart = ProcessLiveness.currentStartMillis();
            while (true) {
                for (int c = 0; c < g.channelCount(); c++) {
                    long off = g.channelOffset(c);
                    if (LONG.compareAndSet(region, off + CHANNEL_STATE_OFFSET, 0L, stateWord(me, ATTACHING))) {
                        LONG.set(region, off + CLIENT_PID_OFFSET, me);
                        LONG.set(region, off + CLIENT_START_OFFSET, myStart);
                        long inc = (long) LONG.get(region, off + INCARNATION_OFFSET) + 1;
                        LONG.set(region, off + INCARNATION_OFFSET, inc);
                        LONG.setRelease(region, off + CHANNEL_STATE_OFFSET, stateWord(me, ATTACHED));
                        return new RpcClient(path, options, arena, region, g, c, inc, header);
                    }
                }
                long state = (long) LONG.getAcquire(region, SERVER_STATE_OFFSET);
                if (state == SERVER_STOPPED || !header.prefix().ownerAlive()) {
                    throw new RpcUnavailableException(path, "the server (pid " + header.serverPid() + ") "
                            + (state == SERVER_STOPPED ? "stopped" : "died") + " while attaching");
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new RpcUnavailableException(path, "all " + g.channelCount() + " channels are taken (waited "
                            + options.attachTimeout() + "); start the server with more channels");
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("mapping rpc region " + path, e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private static Header awaitHeader(Path path, FileChannel ch, long deadline) throws IOException {
        while (true) {
            Header h = Header.of(ShmFiles.readHeader(ch, (int) HEADER_SIZE));
            if (!h.prefix().mayBecome(KIND) || h.prefix().published() || System.nanoTime() - deadline > 0) {
                return h; // complete, not a region at all, or never finished: validate() says which
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
        }
    }

    /**
     * True if {@code path} holds a region whose server is serving and alive now (reads the header
     * only; attaches nothing).
     */
    public static boolean serverLives(Path path) {
        try {
            Header h = Header.of(ShmFiles.readHeader(path, (int) HEADER_SIZE));
            return h.prefix().magic() == MAGIC && h.prefix().published() && h.serverState() == SERVER_SERVING
                    && h.prefix().ownerAlive();
        } catch (IOException e) {
            return false;
        }
    }

    private static void checkServable(Path path, Header h) {
        if (h.serverState() == SERVER_STOPPED) {
            throw new RpcUnavailableException(path, "its server (pid " + h.serverPid() + ") has stopped");
        }
        if (!h.prefix().ownerAlive()) {
            throw new RpcUnavailableException(path, "its server (pid " + h.serverPid() + ") is dead; start strata node again");
        }
    }

    /** The channel this client holds. */
    public int channel() {
        return channel;
    }

    /** Requests that may be outstanding at once (the ring size). */
    public int capacity() {
        return mask + 1;
    }

    /** Requests posted whose responses were not yet taken. */
    public int outstanding() {
        return (int) (posted - consumed);
    }

    /** Payload bytes per request and per response. */
    public int payloadCapacity() {
        return geometry.payloadBytes();
    }

    /** The region's file. */
    public Path path() {
        return path;
    }

    /**
     * The request payload area of the slot the next {@link #post} will use: write the payload here
     * first, then post with its length. Valid while the ring is not full.
     */
    public MemorySegment nextRequestPayload() {
        return requestPayloads[(int) (posted & mask)];
    }

    /** Posts a request without payload; see {@link #post(int, int, long, long, long, long, long, long)}. */
    public long post(int opcode, long a0, long a1, long a2, long a3) {
        return post(opcode, 0, a0, a1, a2, a3, 0L, 0L);
    }

    /**
     * Writes a request into the next slot and publishes it.
     *
     * @param payloadLength bytes already written into {@link #nextRequestPayload()}
     * @return the request's sequence number (from 0), or {@link RpcStatus#RING_FULL}, or the status
     *         of a lost server
     */
    public long post(int opcode, int payloadLength, long a0, long a1, long a2, long a3, long a4, long a5) {
        checkOpen();
        if (lost != 0) {
            return lost;
        }
        if (posted - consumed > mask) {
            return RpcStatus.RING_FULL;
        }
        if (payloadLength < 0 || payloadLength > geometry.payloadBytes()) {
            throw new IllegalArgumentException("request payload of " + payloadLength + " bytes does not fit the slot's "
                    + geometry.payloadBytes() + " bytes");
        }
        long seq = posted;
        SlotProtocol.postRequest(region, slotOffsets[(int) (seq & mask)], tag(incarnation, seq), opcode, payloadLength,
                a0, a1, a2, a3, a4, a5);
        posted = seq + 1;
        return seq;
    }

    /**
     * Waits for the response to the oldest outstanding request and copies it into {@code out}.
     *
     * @return the response's status (also in {@code out}); {@link RpcStatus#NOTHING_OUTSTANDING}
     *         if nothing was posted; {@link RpcStatus#SERVER_DEAD} or
     *         {@link RpcStatus#SERVER_STOPPED} if the server is gone (the request stays
     *         unanswered); {@link RpcStatus#SERVER_UNRESPONSIVE} if it lives but has not beaten for
     *         the heartbeat timeout (the request stays outstanding: await again to keep waiting)
     */
    public int await(RpcResponse out) {
        checkOpen();
        if (consumed == posted) {
            out.fail(RpcStatus.NOTHING_OUTSTANDING, -1);
            return RpcStatus.NOTHING_OUTSTANDING;
        }
        long seq = consumed;
        int s = (int) (seq & mask);
        long slot = slotOffsets[s];
        long tag = tag(incarnation, seq);
        if (!SlotProtocol.responseReady(region, slot, tag)) {
            int status = waitFor(slot, tag);
            if (status != RpcStatus.OK) {
                out.fail(status, seq);
                return status;
            }
        }
        out.fill(region, slot, seq, responsePayloads[s]);
        consumed = seq + 1;
        return out.status();
    }

    private int waitFor(long slot, long tag) {
        if (lost != 0) {
            return lost;
        }
        backoff.reset();
        long lastCheck = 0;
        while (!SlotProtocol.responseReady(region, slot, tag)) {
            backoff.idle();
            if (backoff.pastSpinning()) {
                long now = System.nanoTime();
                if (lastCheck == 0) {
                    lastCheck = now;
                } else if (now - lastCheck >= checkIntervalNanos) {
                    lastCheck = now;
                    int status = serverStatus();
                    if (status != RpcStatus.OK) {
                        if (SlotProtocol.responseReady(region, slot, tag)) {
                            return RpcStatus.OK; // answered just before it went away
                        }
                        return status;
                    }
                }
            }
        }
        return RpcStatus.OK;
    }

    /** Posts one request and waits for its response; requires no other request outstanding. */
    public int call(int opcode, long a0, long a1, long a2, long a3, RpcResponse out) {
        return call(opcode, 0, a0, a1, a2, a3, 0L, 0L, out);
    }

    /** As {@link #call(int, long, long, long, long, RpcResponse)} with a payload and six arguments. */
    public int call(int opcode, int payloadLength, long a0, long a1, long a2, long a3, long a4, long a5, RpcResponse out) {
        if (posted != consumed) {
            throw new IllegalStateException(outstanding() + " requests are outstanding on channel " + channel
                    + ": await them before call()");
        }
        long seq = post(opcode, payloadLength, a0, a1, a2, a3, a4, a5);
        if (seq < 0) {
            out.fail((int) seq, -1);
            return (int) seq;
        }
        return await(out);
    }

    /**
     * Whether the server is there now: {@link RpcStatus#OK}, or {@link RpcStatus#SERVER_STOPPED},
     * {@link RpcStatus#SERVER_DEAD} (both sticky), {@link RpcStatus#SERVER_UNRESPONSIVE}. Costs a
     * few file reads (the pid check).
     */
    public int serverStatus() {
        checkOpen();
        if (lost != 0) {
            return lost;
        }
        long state = (long) LONG.getAcquire(region, SERVER_STATE_OFFSET);
        if (state == SERVER_STOPPED) {
            lost = RpcStatus.SERVER_STOPPED;
            return lost;
        }
        if (!ProcessLiveness.isAlive(serverPid, serverStartMillis)) {
            lost = RpcStatus.SERVER_DEAD;
            return lost;
        }
        long beat = ShmHeader.heartbeat(region);
        if (System.currentTimeMillis() - beat > options.serverHeartbeatTimeout().toMillis()) {
            return RpcStatus.SERVER_UNRESPONSIVE;
        }
        return RpcStatus.OK;
    }

    /** The pid of the server this client attached to. */
    public long serverPid() {
        return serverPid;
    }

    /**
     * Detaches: hands the channel back to the server (which clears it) and unmaps the region.
     * Outstanding requests are abandoned; their responses, if any come, are never read. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            LONG.compareAndSet(region, channelOffset + CHANNEL_STATE_OFFSET, stateWord(pid, ATTACHED), stateWord(pid, DETACHING));
        } finally {
            arena.close();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("rpc client of " + path + " (channel " + channel + ") is closed");
        }
    }
}
