package dev.strata.bench;

import dev.strata.cache.Durability;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerLease;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * JMH benchmarks of one guarded access to peer memory: {@link PeerClient#read} of {@code bytes}
 * from a lease on an in-process {@link LocalLender} (client guard, lender guard, copy), against the
 * baseline of the same {@link MemorySegment#copy} between two off-heap segments with no guard.
 * The ratio of the two scores is the cost of the lease protocol on the access path.
 *
 * <p>Run: {@code java --add-modules jdk.incubator.vector -cp <strata-bench classpath>
 * org.openjdk.jmh.Main PeerAccessJmh}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Thread)
public class PeerAccessJmh {

    @Param({"256", "16384", "262144"})
    public int bytes;

    private LocalLender lender;
    private PeerClient client;
    private PeerLease lease;
    private Arena arena;
    private MemorySegment source;      // bytes, the raw baseline's source (off-heap, seeded random)
    private MemorySegment destination; // bytes, where both benchmarks copy to

    @Setup(Level.Trial)
    public void setUp() {
        lender = new LocalLender(LocalLender.Config.of(0, "bench-peer", 4L * bytes + 4096));
        client = PeerClient.of(List.of(lender), "best_fit");
        lease = client.alloc(bytes, LeaseHints.of(Durability.BACKED)).orElseThrow();
        arena = Arena.ofShared();
        source = arena.allocate(bytes, 64);
        destination = arena.allocate(bytes, 64);
        SplittableRandom random = new SplittableRandom(42);
        for (long i = 0; i < bytes; i++) {
            source.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (random.nextInt(255) + 1));
        }
        if (!client.write(lease, 0, source)) {
            throw new IllegalStateException("could not write the lease " + lease);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        client.close();
        arena.close();
    }

    @Benchmark
    public boolean peerRead() {
        return client.read(lease, 0, destination);
    }

    @Benchmark
    public MemorySegment rawCopy() {
        MemorySegment.copy(source, 0, destination, 0, bytes);
        return destination;
    }
}
