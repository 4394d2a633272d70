package dev.strata.node.daemon;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.node.client.NodeAccess;
import dev.strata.node.index.BlockIndex;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.testing.Property;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The same random sequence of index operations on an embedded index and on one served by the
 * daemon (each on its own pool of the same size) gives the same results, step by step.
 */
class RemoteEmbeddedEquivalenceTest {
    private static final long CAPACITY = 16L << 20;

    @Test
    void remoteAndEmbeddedIndexesAnswerAlike() {
        Property.forAll("remote = embedded", 3, random -> {
            try (NodeTestSupport remoteSide = new NodeTestSupport("equiv-remote");
                 NodeTestSupport embeddedSide = new NodeTestSupport("equiv-embedded");
                 NodeDaemon daemon = NodeDaemon.start(remoteSide.daemonConfig(CAPACITY).conclude(),
                         new PrintStream(new ByteArrayOutputStream()));
                 NodeAccess remote = NodeAccess.open(remoteSide.access(NodeAccess.Mode.DAEMON, CAPACITY));
                 PoolTier pool = PoolTier.open(PoolConfig.builder("nodetest").path(embeddedSide.pool).capacity(CAPACITY)
                         .chunkSize(4096).rootRegionSize(NodeConfig.rootRegionSize(CAPACITY, 4096,
                                 PoolConfig.DEFAULT_PROCESS_SLOTS, 64)).conclude());
                 PoolBlockIndex embedded = PoolBlockIndex.open(pool, dev.strata.node.index.BlockIndexConfig
                         .builder(NodeTestSupport.HASH_VERSION, NodeTestSupport.MODEL).pinsPerProcess(64).conclude())) {
                run(random, remote.index(), embedded);
            }
        });
    }

    private static void run(SplittableRandom random, BlockIndex r, BlockIndex e) {
        int keys = 24;
        List<long[]> pins = new ArrayList<>(); // {remote pin, embedded pin}
        long[] locR = new long[BlockIndex.LOCATION_LONGS];
        long[] locE = new long[BlockIndex.LOCATION_LONGS];
        for (int step = 0; step < 400; step++) {
            int k = random.nextInt(keys);
            long hi = 0xABCD_0000L + k;
            long lo = k * 7919L + 1;
            int op = random.nextInt(7);
            String at = "step " + step + " op " + op + " key " + k;
            switch (op) {
                case 0 -> {
                    long len = 1 + random.nextInt(20_000);
                    long a = r.reserve(hi, lo, len);
                    long b = e.reserve(hi, lo, len);
                    assertThat(Long.signum(a) >= 0 ? 0 : a).as(at).isEqualTo(Long.signum(b) >= 0 ? 0 : b);
                }
                case 1 -> {
                    long len = 1 + random.nextInt(4096);
                    long cs = random.nextLong();
                    assertThat(r.publish(hi, lo, len, cs)).as(at).isEqualTo(e.publish(hi, lo, len, cs));
                }
                case 2 -> assertThat(r.abort(hi, lo)).as(at).isEqualTo(e.abort(hi, lo));
                case 3 -> {
                    long a = r.acquire(hi, lo, locR);
                    long b = e.acquire(hi, lo, locE);
                    assertThat(a > 0).as(at).isEqualTo(b > 0);
                    if (a > 0) {
                        assertThat(locR[BlockIndex.LENGTH]).as(at).isEqualTo(locE[BlockIndex.LENGTH]);
                        assertThat(locR[BlockIndex.CHECKSUM]).as(at).isEqualTo(locE[BlockIndex.CHECKSUM]);
                        pins.add(new long[] {a, b});
                    } else {
                        assertThat(a).as(at).isEqualTo(b);
                    }
                }
                case 4 -> {
                    if (!pins.isEmpty()) {
                        long[] l = pins.remove(random.nextInt(pins.size()));
                        assertThat(r.release(l[0])).as(at).isEqualTo(e.release(l[1]));
                    }
                }
                case 5 -> {
                    int n = 1 + random.nextInt(keys);
                    long[] prefix = new long[2 * n];
                    int start = random.nextInt(keys);
                    for (int i = 0; i < n; i++) {
                        int kk = (start + i) % keys;
                        prefix[2 * i] = 0xABCD_0000L + kk;
                        prefix[2 * i + 1] = kk * 7919L + 1;
                    }
                    assertThat(r.matchPrefix(prefix, 0, n)).as(at).isEqualTo(e.matchPrefix(prefix, 0, n));
                }
                default -> {
                    var sr = r.stats();
                    var se = e.stats();
                    assertThat(sr.published()).as(at).isEqualTo(se.published());
                    assertThat(sr.writing()).as(at).isEqualTo(se.writing());
                    assertThat(sr.publishedBytes()).as(at).isEqualTo(se.publishedBytes());
                    assertThat(sr.livePins()).as(at).isEqualTo(se.livePins());
                }
            }
        }
    }
}
