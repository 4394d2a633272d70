package dev.strata.node.rpc;

import static dev.strata.node.rpc.RpcRegionLayout.*;

import dev.strata.memory.shm.OwnedShmFile;
import dev.strata.memory.shm.ProcessLiveness;
import dev.strata.memory.shm.ShmHeader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The server side of RPC over shared memory: creates the region (layout in
 * {@link RpcRegionLayout}), and one polling thread serves every channel with an
 * {@link RpcHandler}.
 *
 * <p>Design note: the polling thread passes over all channels in turn. For each attached channel
 * it answers every request already posted, up to {@code maxBatch}, in order (a client that posted
 * many requests before waiting gets them answered in one pass), and publishes each response with a
 * release store ({@link SlotProtocol}). When a pass finds nothing, the thread backs off: spin,
 * yield, then park with a bound growing up to {@code maxIdlePark}. Between passes it refreshes the
 * server heartbeat and, every {@code livenessInterval}, reclaims the channels of clients that
 * detached or died (pid and start time): their slots are cleared and the channel is FREE again.
 * Nothing is ever locked, so a client that dies at any instruction leaves nothing held.
 *
 * <p>Lifecycle: {@link #create} builds the region in a temporary file next to the path (refusing
 * if a live server already serves the path); {@link #start} starts the polling thread, marks the
 * region SERVING and renames it atomically over the path, so clients only ever open a complete
 * region, and clients of a dead predecessor keep the old file and see its server dead.
 * {@link #close} marks it STOPPED (waiting clients return {@link RpcStatus#SERVER_STOPPED}),
 * stops the thread, removes the file if it is still ours and unmaps it.
 *
 * <p>Threads: {@link #start}, {@link #close} and the getters from any thread; the handler runs on
 * the polling thread only.
 */
public final class RpcServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RpcServer.class.getName());

    private final RpcServerConfig config;
    private final Geometry geometry;
    private final RpcHandler handler;
    private final OwnedShmFile file;       // the region file; holds the lock on <path>.lock while this server lives
    private final MemorySegment region;    // file.segment()
    private final int mask;
    private final long[] channelOffsets;    // [channel] offset of the channel control line
    private final long[] slotOffsets;       // [channel * slots + slot] offset of the slot
    private final MemorySegment[] requestPayloads;  // [channel * slots + slot]
    private final MemorySegment[] responsePayloads; // [channel * slots + slot]
    private final long[] incarnations;      // [channel] incarnation being served, -1 none (polling thread only)
    private final long[] nextSequence;      // [channel] next request number expected (polling thread only)
    private final RpcCall call;
    private final AtomicLong reclaimed = new AtomicLong();
    private final AtomicLong served = new AtomicLong();
    private volatile boolean running;
    private volatile boolean closed;
    private Thread poller;

    private RpcServer(RpcServerConfig config, RpcHandler handler, OwnedShmFile file) {
        this.config = config;
        this.geometry = config.geometry();
        this.handler = handler;
        this.file = file;
        this.region = file.segment();
        int channels = geometry.channelCount();
        int slots = geometry.slotsPerChannel();
        this.mask = slots - 1;
        this.channelOffsets = new long[channels];
        this.slotOffsets = new long[channels * slots];
        this.requestPayloads = new MemorySegment[channels * slots];
        this.responsePayloads = new MemorySegment[channels * slots];
        for (int c = 0; c < channels; c++) {
            channelOffsets[c] = geometry.channelOffset(c);
            for (int s = 0; s < slots; s++) {
                long slot = geometry.slotOffset(c, s);
                slotOffsets[c * slots + s] = slot;
                requestPayloads[c * slots + s] = region.asSlice(slot + REQUEST_PAYLOAD_OFFSET, geometry.payloadBytes());
                responsePayloads[c * slots + s] = region.asSlice(slot + geometry.responsePayloadOffset(), geometry.payloadBytes());
            }
        }
        this.incarnations = new long[channels];
        java.util.Arrays.fill(incarnations, -1L);
        this.nextSequence = new long[channels];
        this.call = new RpcCall(region, geometry.payloadBytes());
    }

    /**
     * Creates the region for {@code config} in a temporary file beside the path; call
     * {@link #start} to serve it.
     *
     * @throws IllegalStateException  if a live server already serves the path
     * @throws UncheckedIOException   if the file cannot be created, sized or mapped
     */
    public static RpcServer create(RpcServerConfig config, RpcHandler handler) {
        Objects.requireNonNull(handler, "handler");
        Path path = config.path();
        Geometry g = config.geometry();
        OwnedShmFile file = OwnedShmFile.create(path, KIND.noun(), g.totalSize(), (int) HEADER_SIZE, found -> {
            Header h = Header.of(found);
            return h.prefix().magic() == MAGIC && h.serverState() != SERVER_STOPPED && h.prefix().ownerAlive()
                    ? "rpc region " + path + " is served by a live process (pid " + h.serverPid()
                            + "): stop it first or choose another rpc path"
                    : null; // stale (its server died or stopped) or not a region: start() renames the new one over it
        }, lockPath -> "rpc region " + path + " is served by another live process (it holds " + lockPath
                + "): stop it first or choose another rpc path");
        try {
            writeHeader(file.segment(), g, System.currentTimeMillis());
            ShmHeader.publish(file.segment(), KIND);
            return new RpcServer(config, handler, file);
        } catch (RuntimeException | Error e) {
            file.discard();
            throw e;
        }
    }

    /**
     * Starts the polling thread, marks the region SERVING and publishes it at the configured path.
     *
     * @throws IllegalStateException if already started or closed
     */
    public synchronized void start() {
        if (poller != null || closed) {
            throw new IllegalStateException("rpc server for " + config.path() + " was already " + (closed ? "closed" : "started"));
        }
        running = true;
        poller = Thread.ofPlatform().name("strata-rpc-server").daemon().unstarted(this::pollLoop);
        LONG.setRelease(region, SERVER_STATE_OFFSET, SERVER_SERVING);
        poller.start();
        try {
            file.renameOverPath();
        } catch (IOException e) {
            close();
            throw new UncheckedIOException("publishing rpc region " + file.tempPath() + " as " + config.path(), e);
        }
    }

    /** The region's file. */
    public Path path() {
        return config.path();
    }

    public RpcServerConfig config() {
        return config;
    }

    /** Channels now ATTACHING or ATTACHED. */
    public int attachedClients() {
        int n = 0;
        for (long off : channelOffsets) {
            int st = state((long) LONG.getAcquire(region, off + CHANNEL_STATE_OFFSET));
            if (st == ATTACHING || st == ATTACHED) {
                n++;
            }
        }
        return n;
    }

    /** Channels reclaimed from clients that died without detaching. */
    public long reclaimedChannels() {
        return reclaimed.get();
    }

    /** Requests answered so far, as of the polling thread's last heartbeat (every {@code heartbeatInterval}). */
    public long requestsServed() {
        return served.get();
    }

    private void pollLoop() {
        Backoff idle = new Backoff(1000, 20, 1_000, config.maxIdlePark().toNanos());
        long heartbeatNanos = config.heartbeatInterval().toNanos();
        long livenessNanos = config.livenessInterval().toNanos();
        long now = System.nanoTime();
        long nextHeartbeat = now;
        long nextLiveness = now + livenessNanos;
        long total = 0;
        while (running) {
            int n;
            try {
                n = pass();
            } catch (RuntimeException | Error e) {
                if (!running) {
                    return;
                }
                LOG.log(System.Logger.Level.ERROR, "rpc server for " + config.path() + ": polling failed", e);
                throw e;
            }
            if (n > 0) {
                total += n;
                idle.reset();
            } else {
                idle.idle();
            }
            now = System.nanoTime();
            if (now - nextHeartbeat >= 0) {
                nextHeartbeat = now + heartbeatNanos;
                ShmHeader.beat(region, System.currentTimeMillis());
                LONG.setOpaque(region, REQUESTS_SERVED_OFFSET, total);
                served.set(total);
            }
            if (now - nextLiveness >= 0) {
                nextLiveness = now + livenessNanos;
                reclaimDead();
            }
        }
        served.set(total);
    }

    /** One pass over every channel; returns the requests answered. */
    private int pass() {
        int n = 0;
        for (int c = 0; c < channelOffsets.length; c++) {
            long off = channelOffsets[c];
            long word = (long) LONG.getAcquire(region, off + CHANNEL_STATE_OFFSET);
            int st = state(word);
            if (st == ATTACHED) {
                long inc = (long) LONG.get(region, off + INCARNATION_OFFSET);
                if (inc != incarnations[c]) {
                    incarnations[c] = inc;
                    nextSequence[c] = 0;
                }
                n += serve(c, inc);
            } else if (st == DETACHING) {
                release(c, word, false);
            }
        }
        return n;
    }

    private int serve(int c, long incarnation) {
        int slots = mask + 1;
        int base = c * slots;
        long seq = nextSequence[c];
        int n = 0;
        int max = config.maxBatch();
        int payloadBytes = geometry.payloadBytes();
        while (n < max) {
            int s = (int) (seq & mask);
            long slot = slotOffsets[base + s];
            long tag = tag(incarnation, seq);
            if (!SlotProtocol.requestReady(region, slot, tag)) {
                break;
            }
            call.bind(c, slot, requestPayloads[base + s], responsePayloads[base + s]);
            int len = call.requestPayloadLength();
            if (len < 0 || len > payloadBytes) {
                call.status(RpcStatus.BAD_REQUEST).value(0, len);
            } else {
                try {
                    handler.handle(call);
                } catch (RuntimeException | Error e) {
                    LOG.log(System.Logger.Level.WARNING, "rpc handler failed on opcode " + call.opcode() + " from channel " + c, e);
                    call.status(RpcStatus.HANDLER_FAILED);
                    SlotProtocol.responsePayloadLength(region, slot, 0);
                }
            }
            SlotProtocol.publishResponse(region, slot, tag);
            seq++;
            n++;
        }
        nextSequence[c] = seq;
        return n;
    }

    /** Clears a DETACHING channel's slots and frees it. */
    private void release(int c, long word, boolean died) {
        try {
            handler.channelReleased(c, died);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "rpc handler failed to release channel " + c, e);
        }
        int slots = mask + 1;
        for (int s = 0; s < slots; s++) {
            SlotProtocol.clear(region, slotOffsets[c * slots + s]);
        }
        incarnations[c] = -1;
        nextSequence[c] = 0;
        LONG.compareAndSet(region, channelOffsets[c] + CHANNEL_STATE_OFFSET, word, 0L);
    }

    /** Moves channels of dead clients to DETACHING and releases them. */
    private void reclaimDead() {
        for (int c = 0; c < channelOffsets.length; c++) {
            long off = channelOffsets[c];
            long word = (long) LONG.getAcquire(region, off + CHANNEL_STATE_OFFSET);
            int st = state(word);
            if (st != ATTACHING && st != ATTACHED) {
                continue;
            }
            long pid = pidOf(word);
            long start = st == ATTACHED ? (long) LONG.get(region, off + CLIENT_START_OFFSET) : 0L;
            if (ProcessLiveness.isAlive(pid, start)) {
                continue;
            }
            long detaching = stateWord(pid, DETACHING);
            if (LONG.compareAndSet(region, off + CHANNEL_STATE_OFFSET, word, detaching)) {
                release(c, detaching, true);
                reclaimed.incrementAndGet();
                LOG.log(System.Logger.Level.INFO, "rpc region " + config.path() + ": client pid " + pid + " on channel " + c
                        + " died; channel reclaimed");
            }
        }
    }

    /**
     * Marks the region STOPPED, stops the polling thread, removes the file if it is still this
     * server's, and unmaps it. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        LONG.setRelease(region, SERVER_STATE_OFFSET, SERVER_STOPPED);
        running = false;
        Thread t = poller;
        if (t != null) {
            java.util.concurrent.locks.LockSupport.unpark(t);
            try {
                t.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        file.remove(); // then a successor may start
        if (t == null || !t.isAlive()) {
            file.arena().close();
        }
        // else: a handler is stuck; leave the mapping to the process exit rather than crash the thread
    }
}
