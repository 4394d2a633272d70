package dev.strata.cache.expert;

import dev.strata.memory.Allocator;
import dev.strata.memory.Tier;
import dev.strata.memory.transfer.TierCopy;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The DEVICE memory behind the slots of an {@link ExpertPager}: one allocation per slot, each
 * holding one expert image, with a view of the image and of each of its tensors made once per
 * slot. It knows nothing of which expert a slot holds ({@link ExpertSlotTable} does).
 *
 * <p>Invariants (checked by {@link #checkInvariants}): each group has exactly {@code capacity}
 * slots, each slot is one live DEVICE allocation of at least {@link ExpertLayout#bytes()} bytes,
 * and its views cover that allocation. DEVICE bytes never exceed the tier's budget: {@link #grow}
 * allocates only the new slots and gives them all back when the tier refuses one; {@link #truncate}
 * only frees.
 *
 * <p>Threads: the pager's driving thread. The transfer engine's threads write slots of fetches in
 * flight through their handles; the driving thread reads those slots only after joining them.
 */
final class ExpertSlotMemory {

    private final Tier device;
    private final ExpertLayout layout;
    private final long expertBytes;               // bytes of one expert image
    private final long slotBytes;                 // DEVICE bytes of one slot allocation (alignment included)
    private final long slotRequest;               // bytes asked of the tier for one slot (>= expertBytes)
    private final int groups;
    private long[][] slotHandle;                  // [groups][capacity] DEVICE allocation of each slot
    private MemorySegment[][] slotView;           // [groups][capacity] view of each slot's image
    private MemorySegment[][][] tensorView;       // [groups][capacity][tensors] views of each slot's tensors

    /** Takes over {@code initial}: {@code groups × capacity} allocations from {@link #allocate}, group by group. */
    ExpertSlotMemory(Tier device, ExpertLayout layout, int groups, int capacity, long[] initial) {
        this.device = device;
        this.layout = layout;
        this.expertBytes = layout.bytes();
        this.slotBytes = device.allocationSize(initial[0]);
        this.slotRequest = slotBytes; // a grown slot asks for what the first one got (its granule included)
        this.groups = groups;
        this.slotHandle = new long[groups][];
        this.slotView = new MemorySegment[groups][];
        this.tensorView = new MemorySegment[groups][][];
        for (int g = 0; g < groups; g++) {
            slotHandle[g] = Arrays.copyOfRange(initial, g * capacity, (g + 1) * capacity);
            slotView[g] = new MemorySegment[capacity];
            tensorView[g] = new MemorySegment[capacity][];
            for (int s = 0; s < capacity; s++) {
                setViews(g, s);
            }
        }
    }

    /**
     * Allocates {@code count} slots of {@code bytes} in {@code device}, all or nothing.
     *
     * @throws IllegalStateException naming the pager, tier and sizes when the tier cannot hold them
     */
    static long[] allocate(String pager, Tier device, int count, long bytes) {
        long[] handles = new long[count];
        for (int i = 0; i < handles.length; i++) {
            long h = device.allocate(bytes);
            if (h == Allocator.FULL) {
                for (int j = 0; j < i; j++) {
                    device.free(handles[j]);
                }
                throw new IllegalStateException("expert pager '" + pager + "': DEVICE tier '" + device.name() + "' cannot hold "
                        + count + " slots of " + bytes + " bytes (full after " + i + "; capacity " + device.capacity()
                        + ", used " + device.used() + ")");
            }
            handles[i] = h;
        }
        return handles;
    }

    private void setViews(int g, int s) {
        MemorySegment view = device.segment(slotHandle[g][s], 0, expertBytes);
        slotView[g][s] = view;
        MemorySegment[] tensors = new MemorySegment[layout.tensorCount()];
        for (int t = 0; t < tensors.length; t++) {
            tensors[t] = layout.slice(view, t);
        }
        tensorView[g][s] = tensors;
    }

    Tier device() {
        return device;
    }

    /** DEVICE bytes of one slot allocation. */
    long slotBytes() {
        return slotBytes;
    }

    /** The allocation of slot {@code s} of group {@code g}. */
    long handle(int g, int s) {
        return slotHandle[g][s];
    }

    /** The image view of slot {@code s} of group {@code g}. */
    MemorySegment view(int g, int s) {
        return slotView[g][s];
    }

    /** The view of tensor {@code t} of slot {@code s} of group {@code g}. */
    MemorySegment tensor(int g, int s, int t) {
        return tensorView[g][s][t];
    }

    /**
     * Copies the image in slot {@code from} into slot {@code to} of group {@code g} (DEVICE to
     * DEVICE, on this thread) through the one copy path, metered as a read and a write of the
     * device tier.
     */
    void copy(int g, int from, int to) {
        TierCopy.direct().copy(device, slotHandle[g][from], device, slotHandle[g][to], expertBytes);
    }

    /**
     * Adds slots {@code oldCap..newCap-1} to every group: allocates all of them first and, if the
     * tier refuses one, frees those it got and returns false with nothing changed.
     */
    boolean grow(int oldCap, int newCap) {
        int add = newCap - oldCap;
        long[] fresh = new long[groups * add];
        int got = 0;
        try {
            for (; got < fresh.length; got++) {
                long h = device.allocate(slotRequest);
                if (h == Allocator.FULL) {
                    break;
                }
                fresh[got] = h;
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < got; i++) {
                device.free(fresh[i]);
            }
            throw e;
        }
        if (got < fresh.length) {
            for (int i = 0; i < got; i++) {
                device.free(fresh[i]);
            }
            return false;
        }
        for (int g = 0; g < groups; g++) {
            slotHandle[g] = Arrays.copyOf(slotHandle[g], newCap);
            slotView[g] = Arrays.copyOf(slotView[g], newCap);
            tensorView[g] = Arrays.copyOf(tensorView[g], newCap);
            for (int s = newCap - 1; s >= oldCap; s--) {
                slotHandle[g][s] = fresh[g * add + (s - oldCap)];
                setViews(g, s);
            }
        }
        return true;
    }

    /** Frees the slots of group {@code g} from {@code newCap} on (their bytes are no longer needed). */
    void truncate(int g, int newCap) {
        for (int s = newCap; s < slotHandle[g].length; s++) {
            device.free(slotHandle[g][s]);
        }
        slotHandle[g] = Arrays.copyOf(slotHandle[g], newCap);
        slotView[g] = Arrays.copyOf(slotView[g], newCap);
        tensorView[g] = Arrays.copyOf(tensorView[g], newCap);
    }

    /** Frees every slot; the memory is unusable afterwards. */
    void freeAll() {
        for (int g = 0; g < groups; g++) {
            for (long h : slotHandle[g]) {
                device.free(h);
            }
        }
    }

    /** Checks the invariants of the class comment for {@code capacity} slots per group. */
    void checkInvariants(int capacity) {
        for (int g = 0; g < groups; g++) {
            if (slotHandle[g].length != capacity || slotView[g].length != capacity || tensorView[g].length != capacity) {
                throw new IllegalStateException("group " + g + " has " + slotHandle[g].length + " slots, capacity " + capacity);
            }
            for (int s = 0; s < capacity; s++) {
                if (device.allocationSize(slotHandle[g][s]) < expertBytes) {
                    throw new IllegalStateException("slot " + s + " of group " + g + " is smaller than an expert");
                }
                if (slotView[g][s].byteSize() != expertBytes) {
                    throw new IllegalStateException("slot " + s + " of group " + g + " has a view of " + slotView[g][s].byteSize()
                            + " bytes, not " + expertBytes);
                }
            }
        }
    }
}
