package dev.strata.node.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.memory.Checksum64;
import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolTier;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class PoolBlockIndexTest {
    private static final long CHUNK = 16 * Sizes.KiB;

    private static ObjectKey key(int i) {
        return new ObjectKey(0x1234_0000_0000_0000L + i, 0x9E37_79B9_7F4A_7C15L * (i + 1));
    }

    private static boolean readMatches(PoolSharedBlockStore store, ObjectKey k, int length) {
        byte[] back = new byte[length];
        return store.read(k, List.of(MemorySegment.ofArray(back)))
                && java.util.Arrays.equals(back, TestPools.content(k.high(), k.low(), length));
    }

    @Test
    void publishedBlocksAreReadBackWholeAndChecksummed() throws Exception {
        try (TestPools files = new TestPools("basic");
             PoolTier tier = files.open(4 * Sizes.MiB, CHUNK);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            int[] lengths = {1, 4097, 16 * 1024, 16 * 1024 + 1, 99_999};
            for (int i = 0; i < lengths.length; i++) {
                ObjectKey k = key(i);
                // two sources: the gather path
                byte[] all = TestPools.content(k.high(), k.low(), lengths[i]);
                int cut = lengths[i] / 3;
                List<MemorySegment> parts = List.of(MemorySegment.ofArray(all).asSlice(0, cut),
                        MemorySegment.ofArray(all).asSlice(cut));
                assertThat(store.publish(k, parts)).isEqualTo(PublishStatus.PUBLISHED);
                assertThat(store.publish(k, parts)).as("second publish of the same key").isEqualTo(PublishStatus.EXISTS);
            }
            for (int i = 0; i < lengths.length; i++) {
                assertThat(readMatches(store, key(i), lengths[i])).as("block %d", i).isTrue();
            }
            ObjectKey[] chain = {key(0), key(1), key(2), key(77), key(3)};
            assertThat(store.matchPrefix(chain, 0, chain.length)).isEqualTo(3);
            assertThat(store.matchPrefix(chain, 3, 2)).isZero();
            long[] flat = {key(0).high(), key(0).low(), key(1).high(), key(1).low(), key(99).high(), key(99).low()};
            assertThat(index.matchPrefix(flat, 0, 3)).isEqualTo(2);
            assertThat(store.read(key(77), List.of(MemorySegment.ofArray(new byte[5])))).isFalse();
            assertThatThrownBy(() -> store.read(key(1), List.of(MemorySegment.ofArray(new byte[10]))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4097");

            long[] location = new long[BlockIndex.LOCATION_LONGS];
            long pin = index.acquire(key(4).high(), key(4).low(), location);
            assertThat(pin).isPositive();
            assertThat(location[BlockIndex.LENGTH]).isEqualTo(99_999);
            MemorySegment raw = tier.dataArea().asSlice(location[BlockIndex.HANDLE], location[BlockIndex.LENGTH]);
            assertThat(Checksum64.of(raw, 0, raw.byteSize())).isEqualTo(location[BlockIndex.CHECKSUM]);
            IndexStats stats = index.stats();
            assertThat(stats.published()).isEqualTo(5);
            assertThat(stats.pinned()).isEqualTo(1);
            assertThat(stats.livePins()).isEqualTo(1);
            assertThat(stats.publishedBytes()).isEqualTo(java.util.Arrays.stream(lengths).asLongStream().sum());
            assertThat(stats.hashVersion()).isEqualTo(TestPools.HASH_VERSION);
            assertThat(stats.modelFingerprint()).isEqualTo(TestPools.MODEL);
            assertThat(index.release(pin)).isEqualTo(BlockIndex.OK);
            assertThatThrownBy(() -> index.release(-5)).isInstanceOf(IllegalArgumentException.class);
            assertThat(index.release(pin)).as("released twice").isEqualTo(BlockIndex.EXPIRED);
            assertThat(index.stats().pinned()).isZero();
            long used = 0;
            for (int l : lengths) {
                used += Sizes.alignUp(l, CHUNK);
            }
            assertThat(tier.used()).isEqualTo(used).isEqualTo(tier.usedByScan());
        }
    }

    @Test
    void reserveAbortAndPublishReturnStatusCodes() throws Exception {
        try (TestPools files = new TestPools("codes");
             PoolTier tier = files.open(2 * Sizes.MiB, CHUNK);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
            ObjectKey k = key(1);
            assertThat(index.publish(k.high(), k.low(), 10, 0)).isEqualTo(BlockIndex.NOT_RESERVED);
            assertThat(index.abort(k.high(), k.low())).isEqualTo(BlockIndex.NOT_RESERVED);
            long h = index.reserve(k.high(), k.low(), 5000);
            assertThat(h).isNotNegative();
            assertThat(index.reserve(k.high(), k.low(), 5000)).isEqualTo(BlockIndex.EXISTS);
            assertThat(index.acquire(k.high(), k.low(), new long[4])).as("not readable while written").isEqualTo(BlockIndex.NOT_FOUND);
            assertThat(index.stats().writing()).isEqualTo(1);
            assertThat(tier.used()).isEqualTo(CHUNK);
            assertThat(index.abort(k.high(), k.low())).isEqualTo(BlockIndex.OK);
            assertThat(tier.used()).isZero();
            assertThat(index.stats().writing()).isZero();
            assertThatThrownBy(() -> index.reserve(k.high(), k.low(), 0)).isInstanceOf(IllegalArgumentException.class);
            assertThat(index.reserve(k.high(), k.low(), 3 * Sizes.MiB)).as("larger than the pool").isEqualTo(BlockIndex.FULL);
            assertThat(index.stats().writing()).isZero();
        }
    }

    @Test
    void attachingWithAnotherHashVersionOrModelIsRefusedNamingBoth() throws Exception {
        try (TestPools files = new TestPools("identity");
             PoolTier tier = files.open(2 * Sizes.MiB, CHUNK);
             PoolBlockIndex first = PoolBlockIndex.open(tier, TestPools.identity().conclude());
             PoolTier second = PoolTier.open(files.config(2 * Sizes.MiB, CHUNK).conclude())) {
            ObjectKey other = new ObjectKey(0xAAAA_0000_0000_0001L, 0x2L);
            assertThatThrownBy(() -> PoolBlockIndex.open(second, BlockIndexConfig.builder(TestPools.HASH_VERSION + 1,
                    TestPools.MODEL).conclude()))
                    .isInstanceOf(IndexIdentityException.class)
                    .hasMessageContaining("block-hash version " + TestPools.HASH_VERSION)
                    .hasMessageContaining("block-hash version " + (TestPools.HASH_VERSION + 1))
                    .hasMessageContaining(TestPools.MODEL.toString());
            assertThatThrownBy(() -> PoolBlockIndex.open(second, BlockIndexConfig.builder(TestPools.HASH_VERSION, other).conclude()))
                    .isInstanceOf(IndexIdentityException.class)
                    .hasMessageContaining(TestPools.MODEL.toString())
                    .hasMessageContaining(other.toString());
            new PoolSharedBlockStore(first).publish(key(5), List.of(TestPools.contentSegment(key(5), 777)));
            try (PoolBlockIndex same = PoolBlockIndex.open(second, TestPools.identity().conclude())) {
                assertThat(same.hashVersion()).isEqualTo(TestPools.HASH_VERSION);
                assertThat(same.modelFingerprint()).isEqualTo(TestPools.MODEL);
                assertThat(readMatches(new PoolSharedBlockStore(same), key(5), 777)).isTrue();
            }
        }
    }

    @Test
    void aPoolWithoutARootRegionIsRefusedClearly() throws Exception {
        try (TestPools files = new TestPools("noroot");
             PoolTier tier = PoolTier.open(files.config(2 * Sizes.MiB, CHUNK).rootRegionSize(0).conclude())) {
            assertThatThrownBy(() -> PoolBlockIndex.open(tier, TestPools.identity().conclude()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("root region of 0 bytes").hasMessageContaining(files.name);
        }
    }

    /** The offset of the entry that holds {@code k}, found by its key fields. */
    private static long entryOffset(PoolBlockIndex index, ObjectKey k) {
        MemorySegment region = index.tier().rootRegion();
        long base = IndexRegion.get(region, IndexRegion.ENTRY_TABLE_OFFSET_OFFSET);
        for (long e = 0; e < index.entryCount(); e++) {
            long a = base + e * IndexRegion.ENTRY_SIZE;
            if (IndexRegion.get(region, a + IndexRegion.E_KEY_HIGH) == k.high()
                    && IndexRegion.get(region, a + IndexRegion.E_KEY_LOW) == k.low()
                    && IndexRegion.state(IndexRegion.get(region, a)) == IndexRegion.PUBLISHED) {
                return a;
            }
        }
        throw new AssertionError("no entry for " + k);
    }

    @Test
    void aCorruptEntryIsReportedQuarantinedAndTheOthersStayReadable() throws Exception {
        try (TestPools files = new TestPools("corrupt");
             PoolTier tier = files.open(4 * Sizes.MiB, CHUNK);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            int n = 12;
            for (int i = 0; i < n; i++) {
                store.publish(key(i), List.of(TestPools.contentSegment(key(i), 1000 + 37 * i)));
            }
            MemorySegment region = tier.rootRegion();
            long bad = entryOffset(index, key(3));
            long entryNumber = (bad - IndexRegion.get(region, IndexRegion.ENTRY_TABLE_OFFSET_OFFSET)) / IndexRegion.ENTRY_SIZE;
            IndexRegion.set(region, bad + IndexRegion.E_LENGTH, IndexRegion.get(region, bad + IndexRegion.E_LENGTH) ^ 0x40);
            long impossible = entryOffset(index, key(7));
            IndexRegion.set(region, impossible, IndexRegion.get(region, impossible) | 7); // state 7 does not exist

            assertThatThrownBy(() -> store.read(key(3), List.of(MemorySegment.ofArray(new byte[1000 + 37 * 3]))))
                    .isInstanceOf(CorruptIndexEntryException.class)
                    .hasMessageContaining("entry " + entryNumber)
                    .hasMessageContaining(key(3).toString())
                    .hasMessageContaining("quarantined");
            assertThat(index.acquire(key(3).high(), key(3).low(), new long[4])).isEqualTo(BlockIndex.NOT_FOUND);
            assertThat(index.acquire(key(7).high(), key(7).low(), new long[4])).isEqualTo(BlockIndex.NOT_FOUND);
            for (int i = 0; i < n; i++) {
                if (i != 3 && i != 7) {
                    assertThat(readMatches(store, key(i), 1000 + 37 * i)).as("block %d still readable", i).isTrue();
                }
            }
            IndexStats stats = index.stats();
            assertThat(stats.quarantined()).isEqualTo(2);
            assertThat(stats.published()).isEqualTo(n - 2);
            // the key can be published again in a fresh entry
            assertThat(store.publish(key(3), List.of(TestPools.contentSegment(key(3), 1111)))).isEqualTo(PublishStatus.PUBLISHED);
            assertThat(readMatches(store, key(3), 1111)).isTrue();
        }
    }

    @Test
    void aFullPoolEvictsOldestUnpinnedFirstAndIsFullOnlyWhenEverythingIsPinned() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000);
        try (TestPools files = new TestPools("full");
             PoolTier tier = files.open(4 * CHUNK, CHUNK);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().clockMillis(now::get).conclude())) {
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            int length = (int) (CHUNK - 100); // one chunk each: no fragmentation, whatever the allocator's start
            for (int i = 0; i < 4; i++) {
                now.addAndGet(10);
                assertThat(store.publish(key(i), List.of(TestPools.contentSegment(key(i), length)))).isEqualTo(PublishStatus.PUBLISHED);
            }
            now.addAndGet(10);
            assertThat(readMatches(store, key(0), length)).isTrue(); // key 0 is now the most recent
            now.addAndGet(10);
            assertThat(store.publish(key(4), List.of(TestPools.contentSegment(key(4), length)))).isEqualTo(PublishStatus.PUBLISHED);
            assertThat(index.isPublished(key(1).high(), key(1).low())).as("oldest access evicted").isFalse();
            for (int i : new int[] {0, 2, 3, 4}) {
                assertThat(readMatches(store, key(i), length)).as("block %d kept", i).isTrue();
            }
            // pin everything
            List<Long> pins = new ArrayList<>();
            long[] loc = new long[4];
            for (int i : new int[] {0, 2, 3, 4}) {
                pins.add(index.acquire(key(i).high(), key(i).low(), loc));
            }
            assertThat(index.stats().pinned()).isEqualTo(4);
            assertThat(store.publish(key(5), List.of(TestPools.contentSegment(key(5), length)))).isEqualTo(PublishStatus.FULL);
            assertThat(index.evict(Long.MAX_VALUE)).isZero();
            for (int i : new int[] {0, 2, 3, 4}) {
                assertThat(readMatches(store, key(i), length)).as("pinned block %d kept", i).isTrue();
            }
            assertThat(index.release(pins.get(1))).isEqualTo(BlockIndex.OK); // unpins key 2
            assertThat(store.publish(key(5), List.of(TestPools.contentSegment(key(5), length)))).isEqualTo(PublishStatus.PUBLISHED);
            assertThat(index.isPublished(key(2).high(), key(2).low())).isFalse();
            assertThat(readMatches(store, key(5), length)).isTrue();
            assertThat(tier.used()).isEqualTo(4 * CHUNK).isEqualTo(tier.usedByScan());
            for (long l : pins) {
                index.release(l);
            }
        }
    }

    @Test
    void anExpiredPinStopsPinningAndIsReaped() throws Exception {
        AtomicLong now = new AtomicLong(5_000_000);
        try (TestPools files = new TestPools("expiry");
             PoolTier tier = files.open(8 * CHUNK, CHUNK);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().clockMillis(now::get)
                     .pinDuration(Duration.ofSeconds(2)).conclude())) {
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            store.publish(key(1), List.of(TestPools.contentSegment(key(1), 3000)));
            store.publish(key(2), List.of(TestPools.contentSegment(key(2), 3000)));
            long pin = index.acquire(key(1).high(), key(1).low(), new long[4]);
            long other = index.acquire(key(2).high(), key(2).low(), new long[4]);
            assertThat(index.evict(Long.MAX_VALUE)).isZero();
            now.addAndGet(1999);
            assertThat(index.evict(Long.MAX_VALUE)).isZero();
            assertThat(index.release(other)).isEqualTo(BlockIndex.OK);
            now.addAndGet(2);
            assertThat(index.stats().livePins()).isZero();
            assertThat(index.reap()).as("the expired pin is cleared").isEqualTo(1);
            assertThat(index.evict(Long.MAX_VALUE)).isEqualTo(2 * CHUNK);
            assertThat(index.release(pin)).isEqualTo(BlockIndex.EXPIRED);
            assertThat(tier.used()).isZero();
        }
    }

    @Test
    void aReopenedIndexSeesEveryPublishedBlock() throws Exception {
        try (TestPools files = new TestPools("reopen")) {
            try (PoolTier tier = files.open(4 * Sizes.MiB, CHUNK);
                 PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
                PoolSharedBlockStore store = new PoolSharedBlockStore(index);
                for (int i = 0; i < 20; i++) {
                    store.publish(key(i), List.of(TestPools.contentSegment(key(i), 2000 + i)));
                }
                index.reserve(key(100).high(), key(100).low(), 5000); // left unpublished: aborted at close
            }
            try (PoolTier tier = PoolTier.open(files.config(4 * Sizes.MiB, CHUNK).conclude());
                 PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
                PoolSharedBlockStore store = new PoolSharedBlockStore(index);
                for (int i = 0; i < 20; i++) {
                    assertThat(readMatches(store, key(i), 2000 + i)).isTrue();
                }
                assertThat(index.stats().published()).isEqualTo(20);
                assertThat(index.stats().writing()).isZero();
                assertThat(tier.used()).isEqualTo(20 * CHUNK);
            }
        }
    }

    @Test
    void evictedBlocksAreHandedToTheEvictionSinkWithTheirVerifiedBytesFirst() throws Exception {
        java.util.Map<ObjectKey, byte[]> handed = new java.util.LinkedHashMap<>();
        try (TestPools files = new TestPools("sink");
             PoolTier tier = files.open(1 * Sizes.MiB, CHUNK);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity()
                     .evictionSink((k, kind, bytes) -> {
                         assertThat(kind).isEqualTo(dev.strata.cache.ObjectKind.KV_BLOCK);
                         handed.put(k, bytes.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
                     }).conclude())) {
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            int length = 100_000; // 7 chunks
            // a block whose bytes are damaged in the pool after publication is not handed on
            ObjectKey damaged = key(0);
            assertThat(store.publish(damaged, List.of(MemorySegment.ofArray(TestPools.content(damaged.high(), damaged.low(), length)))))
                    .isEqualTo(PublishStatus.PUBLISHED);
            long[] location = new long[BlockIndex.LOCATION_LONGS];
            long pin = index.acquire(damaged.high(), damaged.low(), location);
            MemorySegment raw = tier.dataArea().asSlice(location[BlockIndex.HANDLE], location[BlockIndex.LENGTH]);
            raw.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 500, (byte) (raw.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 500) ^ 1));
            index.release(pin);
            for (int i = 1; i <= 20; i++) { // far more than 1 MiB: the oldest are evicted
                ObjectKey k = key(i);
                assertThat(store.publish(k, List.of(MemorySegment.ofArray(TestPools.content(k.high(), k.low(), length)))))
                        .isEqualTo(PublishStatus.PUBLISHED);
            }
            assertThat(handed).isNotEmpty().doesNotContainKey(damaged);
            for (var e : handed.entrySet()) {
                ObjectKey k = e.getKey();
                assertThat(e.getValue()).as("block %s as published", k).isEqualTo(TestPools.content(k.high(), k.low(), length));
                assertThat(store.matchPrefix(new ObjectKey[] {k}, 0, 1)).as("%s left the pool", k).isZero();
            }
            assertThat(store.matchPrefix(new ObjectKey[] {damaged}, 0, 1)).as("the damaged block was evicted too").isZero();
        }
    }
}
