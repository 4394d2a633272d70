package dev.strata.cluster;

import dev.strata.memory.transfer.StagingPool;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A value the CLUSTER tier sends to or receives from the cluster, as {@link ClusterValueCodec}
 * encodes it.
 *
 * <p>Threads: see each kind.
 */
sealed interface ClusterValue permits ClusterValue.Staged, ClusterValue.Bytes {

    /** Bytes the value occupies on the wire (the bulk string's length). */
    int length();

    /**
     * A block's value staged in a buffer of the write window's {@link StagingPool}: built on the
     * writer's thread (so the block's own memory is free once the write is offered), copied into
     * the command's buffer when the client encodes the command, on its event loop.
     *
     * <h2>Design note</h2>
     * The buffer goes back to the pool when the write is answered, failed or timed out, and the
     * encoder may still be about to read it (a command completed by its timeout while it waited to
     * be encoded). A reference count orders the two: the write holds one reference, the encoder
     * takes one for its copy only while the count is above zero, and whoever drops the last one
     * gives the buffer back. An encoder that comes too late writes zeros instead, a value that
     * fails the format's magic check and is never loaded.
     *
     * <p>Threads: {@link #tryRetain} and {@link #release} from any thread.
     */
    final class Staged implements ClusterValue {
        private final StagingPool pool;
        private final MemorySegment buffer;               // [length] the value: header and payload
        private final AtomicInteger references = new AtomicInteger(1); // the write's, plus an encoder's while it copies

        Staged(StagingPool pool, MemorySegment buffer) {
            if (buffer.byteSize() > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("a cluster value of " + buffer.byteSize() + " bytes is too large");
            }
            this.pool = pool;
            this.buffer = buffer;
        }

        /** The value's bytes; read them only while holding a reference. */
        MemorySegment buffer() {
            return buffer;
        }

        @Override
        public int length() {
            return (int) buffer.byteSize();
        }

        /** Takes a reference for a copy; false once the buffer has gone back to the pool. */
        boolean tryRetain() {
            while (true) {
                int n = references.get();
                if (n == 0) {
                    return false;
                }
                if (references.compareAndSet(n, n + 1)) {
                    return true;
                }
            }
        }

        /** Drops a reference; the last one gives the buffer back to the pool. */
        void release() {
            int n = references.decrementAndGet();
            if (n == 0) {
                pool.giveBack(buffer);
            } else if (n < 0) {
                throw new IllegalStateException("cluster value released more often than retained");
            }
        }
    }

    /** Bytes held in an array: a script's argument, or a value read back whole. Immutable by convention; any thread. */
    record Bytes(byte[] bytes) implements ClusterValue {
        @Override
        public int length() {
            return bytes.length;
        }
    }
}
