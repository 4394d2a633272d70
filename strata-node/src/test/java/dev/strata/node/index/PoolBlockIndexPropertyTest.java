package dev.strata.node.index;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.ObjectKey;
import dev.strata.memory.Checksum64;
import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolTier;
import dev.strata.testing.Property;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Random sequences of reserve, publish, abort, acquire, release, evict, clock steps and reaps by
 * two attachments of one pool (two process slots), with the invariants checked after every step:
 * a block pinned by an unexpired pin is never evicted and keeps its bytes; the pool holds
 * exactly the published blocks plus the open reservations; the index's counts agree.
 */
class PoolBlockIndexPropertyTest {
    private static final long CHUNK = 4 * Sizes.KiB;
    private static final int KEYS = 40;
    private static final long PIN_MILLIS = 5_000;

    private record Held(int process, int key, long pin, long handle, long length, long deadline) {
    }

    private record Reservation(int process, long handle, long length) {
    }

    private static ObjectKey key(int i) {
        return new ObjectKey(0x3C3C_0000_0000_0000L | i, 0x9E37_79B9_7F4A_7C15L * (i + 3));
    }

    private static int length(int i) {
        return 1 + (int) Math.floorMod(key(i).hash64(), 3 * CHUNK); // 1 to 3 chunks, odd sizes
    }

    @Test
    void evictionNeverFreesAPinnedBlockAndNothingLeaks() {
        Property.forAll("index-pins", 12, random -> {
            AtomicLong now = new AtomicLong(10_000_000);
            try (TestPools files = new TestPools("prop");
                 PoolTier tierA = files.open(24 * CHUNK, CHUNK);
                 PoolTier tierB = PoolTier.open(files.config(24 * CHUNK, CHUNK).conclude())) {
                BlockIndexConfig config = TestPools.identity().clockMillis(now::get)
                        .pinDuration(Duration.ofMillis(PIN_MILLIS)).pinsPerProcess(8).conclude();
                try (PoolBlockIndex a = PoolBlockIndex.open(tierA, config);
                     PoolBlockIndex b = PoolBlockIndex.open(tierB, config)) {
                    run(random, now, List.of(a, b), tierA);
                }
            }
        });
    }

    private static void run(SplittableRandom random, AtomicLong now, List<PoolBlockIndex> indexes, PoolTier tier) {
        List<Held> held = new ArrayList<>();
        Map<Integer, Reservation> reserved = new HashMap<>();
        long[] location = new long[BlockIndex.LOCATION_LONGS];
        for (int step = 0; step < 250; step++) {
            int p = random.nextInt(2);
            PoolBlockIndex index = indexes.get(p);
            int k = random.nextInt(KEYS);
            ObjectKey key = key(k);
            int op = random.nextInt(100);
            String what;
            if (op < 30) {
                what = "reserve " + k;
                long h = index.reserve(key.high(), key.low(), length(k));
                if (h >= 0) {
                    assertThat(reserved).doesNotContainKey(k);
                    reserved.put(k, new Reservation(p, h, length(k)));
                } else {
                    assertThat(h).isIn(BlockIndex.EXISTS, BlockIndex.FULL);
                    if (h == BlockIndex.FULL) {
                        assertFullMeansAllPinned(indexes.getFirst(), held, now.get(), reserved);
                    }
                }
            } else if (op < 50 && !reserved.isEmpty()) {
                int rk = reserved.keySet().stream().sorted().toList().get(random.nextInt(reserved.size()));
                Reservation r = reserved.remove(rk);
                PoolBlockIndex owner = indexes.get(r.process());
                ObjectKey rkey = key(rk);
                if (random.nextInt(5) == 0) {
                    what = "abort " + rk;
                    assertThat(owner.abort(rkey.high(), rkey.low())).isEqualTo(BlockIndex.OK);
                } else {
                    what = "publish " + rk;
                    assertThat(indexes.get(1 - r.process()).publish(rkey.high(), rkey.low(), r.length(), 0))
                            .as("only the reserving process may publish").isEqualTo(BlockIndex.NOT_RESERVED);
                    byte[] bytes = TestPools.content(rkey.high(), rkey.low(), (int) r.length());
                    long sum = Checksum64.copy(MemorySegment.ofArray(bytes), 0, tier.dataArea(), r.handle(), bytes.length);
                    assertThat(owner.publish(rkey.high(), rkey.low(), r.length(), sum)).isEqualTo(BlockIndex.OK);
                }
            } else if (op < 70) {
                what = "acquire " + k;
                long pin = index.acquire(key.high(), key.low(), location);
                if (pin > 0) {
                    held.add(new Held(p, k, pin, location[BlockIndex.HANDLE], location[BlockIndex.LENGTH], now.get() + PIN_MILLIS));
                } else {
                    assertThat(pin).isIn(BlockIndex.NOT_FOUND, BlockIndex.NO_PIN);
                }
            } else if (op < 82 && !held.isEmpty()) {
                Held h = held.remove(random.nextInt(held.size()));
                what = "release " + h;
                long r = indexes.get(h.process()).release(h.pin());
                assertThat(r).isEqualTo(now.get() >= h.deadline() ? BlockIndex.EXPIRED : BlockIndex.OK);
            } else if (op < 90) {
                long bytes = random.nextLong(1, 8 * CHUNK);
                what = "evict " + bytes;
                index.evict(bytes);
            } else if (op < 96) {
                long dt = random.nextLong(1, PIN_MILLIS / 2);
                what = "clock +" + dt;
                now.addAndGet(dt);
            } else {
                what = "reap";
                index.reap();
                long t = now.get();
                held.removeIf(h -> t >= h.deadline()); // reaped: their records may serve other pins now
            }
            checkInvariants(what, step, indexes, tier, held, reserved, now.get());
        }
        for (Held h : held) {
            indexes.get(h.process()).release(h.pin());
        }
    }

    private static void assertFullMeansAllPinned(PoolBlockIndex index, List<Held> held, long now, Map<Integer, Reservation> reserved) {
        // FULL: every published block is pinned by an unexpired pin (or there is no room at all)
        for (int i = 0; i < KEYS; i++) {
            ObjectKey k = key(i);
            if (index.isPublished(k.high(), k.low())) {
                final int key = i;
                assertThat(held.stream().anyMatch(h -> h.key() == key && h.deadline() > now))
                        .as("FULL returned while block %d was unpinned (reservations %s)", i, reserved.keySet()).isTrue();
            }
        }
    }

    private static void checkInvariants(String what, int step, List<PoolBlockIndex> indexes, PoolTier tier, List<Held> held,
                                        Map<Integer, Reservation> reserved, long now) {
        String at = "after step " + step + " (" + what + ")";
        PoolBlockIndex index = indexes.getFirst();
        for (Held h : held) {
            if (h.deadline() <= now) {
                continue;
            }
            ObjectKey k = key(h.key());
            assertThat(index.isPublished(k.high(), k.low())).as("%s: pinned block %d was evicted", at, h.key()).isTrue();
            byte[] back = new byte[(int) h.length()];
            assertThat(tier.read(h.handle(), MemorySegment.ofArray(back))).as("%s: pinned block %d readable", at, h.key()).isTrue();
            assertThat(back).as("%s: pinned block %d bytes", at, h.key()).isEqualTo(TestPools.content(k.high(), k.low(), back.length));
        }
        long used = 0;
        int published = 0;
        for (int i = 0; i < KEYS; i++) {
            ObjectKey k = key(i);
            if (index.isPublished(k.high(), k.low())) {
                assertThat(reserved).as("%s: %d both published and reserved", at, i).doesNotContainKey(i);
                used += Sizes.alignUp(length(i), CHUNK);
                published++;
            }
        }
        for (Reservation r : reserved.values()) {
            used += Sizes.alignUp(r.length(), CHUNK);
        }
        assertThat(tier.usedByScan()).as("%s: pool holds exactly published blocks and open reservations", at).isEqualTo(used);
        assertThat(tier.used()).as(at).isEqualTo(used);
        IndexStats stats = index.stats();
        assertThat(stats.published()).as(at).isEqualTo(published);
        assertThat(stats.writing()).as(at).isEqualTo(reserved.size());
        assertThat(stats.evicting()).as(at).isZero();
        assertThat(stats.quarantined()).as(at).isZero();
        long live = held.stream().filter(h -> h.deadline() > now).count();
        assertThat(stats.livePins()).as(at).isEqualTo(live);
        assertThat(stats.pinned()).as(at).isEqualTo(held.stream().filter(h -> h.deadline() > now).map(Held::key).distinct().count());
    }
}
