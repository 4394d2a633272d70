package dev.strata.memory.alloc;

import dev.strata.memory.Allocator;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The test's own record of what an allocator handed out, and the checks that compare the
 * allocator's listings against it. Used by one test thread at a time.
 */
final class AllocatorModel {

    final TreeMap<Long, long[]> live = new TreeMap<>(); // offset -> {requested, reserved}

    void allocated(long offset, long requested, long reserved) {
        assertThat(live).doesNotContainKey(offset);
        live.put(offset, new long[] {requested, reserved});
    }

    void freed(long offset) {
        assertThat(live.remove(offset)).as("model knows offset %d", offset).isNotNull();
    }

    /**
     * Checks: no overlap, within bounds, alignment, reserved >= requested, used == sum of live
     * sizes, count matches, and free + live ranges cover [0, capacity) exactly.
     */
    void check(Allocator allocator, List<FreeRange> freeRanges, List<FreeRange> liveRanges) {
        long sum = 0;
        long previousEnd = 0;
        for (Map.Entry<Long, long[]> e : live.entrySet()) {
            long offset = e.getKey();
            long requested = e.getValue()[0];
            long reserved = e.getValue()[1];
            assertThat(offset).as("offset at or after the previous end").isGreaterThanOrEqualTo(previousEnd);
            assertThat(offset % allocator.alignment()).as("alignment of %d", offset).isZero();
            assertThat(reserved).isGreaterThanOrEqualTo(requested);
            assertThat(allocator.sizeOf(offset)).isEqualTo(reserved);
            assertThat(allocator.sizeIfAllocated(offset)).isEqualTo(reserved);
            assertThat(offset + reserved).as("end of %d", offset).isLessThanOrEqualTo(allocator.capacity());
            previousEnd = offset + reserved;
            sum += reserved;
        }
        assertThat(allocator.used()).isEqualTo(sum);
        assertThat(allocator.allocationCount()).isEqualTo(live.size());
        List<FreeRange> modelLive = new ArrayList<>();
        live.forEach((o, v) -> modelLive.add(new FreeRange(o, v[1])));
        assertThat(liveRanges).containsExactlyElementsOf(modelLive);

        TreeMap<Long, FreeRange> all = new TreeMap<>();
        for (FreeRange r : freeRanges) {
            assertThat(r.size()).isPositive();
            assertThat(allocator.sizeIfAllocated(r.offset())).as("free offset %d", r.offset()).isEqualTo(Allocator.NOT_ALLOCATED);
            assertThat(all.put(r.offset(), r)).as("free range %s collides", r).isNull();
        }
        for (FreeRange r : liveRanges) {
            assertThat(all.put(r.offset(), r)).as("live range %s collides with a free range", r).isNull();
        }
        long cursor = 0;
        for (FreeRange r : all.values()) {
            assertThat(r.offset()).as("ranges cover without gap or overlap").isEqualTo(cursor);
            cursor = r.end();
        }
        assertThat(cursor).as("ranges end at capacity").isEqualTo(allocator.capacity());
        for (long outside : new long[] {-allocator.alignment(), allocator.capacity(), Long.MAX_VALUE}) {
            assertThat(allocator.sizeIfAllocated(outside)).as("offset %d outside", outside).isEqualTo(Allocator.NOT_ALLOCATED);
        }
    }
}
