package dev.strata.bench;

import dev.strata.bench.peer.LinkCostModel;
import dev.strata.memory.Sizes;
import dev.strata.memory.device.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The host link of a CUDA device, measured through the driver ({@link CudaDriver}) where the
 * machine has one: copies from host memory to the device and back, from page-locked memory
 * ({@code cuMemHostAlloc}) and from ordinary (pageable) memory, at the block sizes of the tier
 * copies and in 64 MiB copies (the link's own ceiling). Every figure's baseline is the host link the models of {@code bench peer} and
 * {@code bench seeds} assume ({@link LinkCostModel#PCIE_GEN5_BYTES_PER_SECOND}, PCIe 5.0 x16),
 * so its ratio says how far the assumption is from this machine; they are information (goal
 * {@code >= 0}). On a machine without a driver or a device the measure returns no figures and
 * says why in the notes.
 *
 * <p>Names: {@code cuda_<host_to_device|device_to_host>_<pinned|pageable>_<size>}, in GB/s; each
 * round copies the whole working set (64 MiB quick, 256 MiB full) in copies of the size, one
 * synchronous driver call each, the context synchronised before the clock stops.
 *
 * <p>Confined to the calling thread (it makes device 0's primary context current there).
 */
public final class CudaLinkMeasure {
    // the tier copies' block sizes, then one copy as large as the quick working set: the link's own ceiling
    private static final long[] SIZES = {16 * Sizes.KiB, 256 * Sizes.KiB, 2 * Sizes.MiB, 64 * Sizes.MiB};

    private CudaLinkMeasure() {
    }

    /** Measures device 0's host link, or adds to {@code notes} why there is none and returns no figures. */
    public static List<Figure> figures(boolean quick, List<String> notes) {
        CudaDriver.Loaded loaded = CudaDriver.load();
        if (!(loaded instanceof CudaDriver.Available available)) {
            notes.add("no CUDA host-link figures: " + ((CudaDriver.Unavailable) loaded).reason());
            return List.of();
        }
        CudaDriver cuda = available.driver();
        long workingSet = quick ? 64 * Sizes.MiB : 256 * Sizes.MiB;
        int rounds = quick ? 3 : Trials.FULL_ROUNDS;
        List<Figure> figures = new ArrayList<>();
        MemorySegment context = cuda.retainPrimaryContext(0);
        try (Arena arena = Arena.ofConfined()) {
            cuda.makeCurrent(context);
            notes.add(String.format(Locale.ROOT, "CUDA host link measured on device 0: %s, %.0f GiB", cuda.deviceName(0),
                    cuda.deviceMemoryBytes(0) / (double) Sizes.GiB));
            long device = cuda.allocateDevice(workingSet);
            MemorySegment pinned = cuda.allocatePinnedHost(workingSet);
            try {
                MemorySegment pageable = arena.allocate(workingSet, 4096);
                SplittableRandom random = new SplittableRandom(workingSet);
                for (long o = 0; o < workingSet; o += 8) {
                    long v = random.nextLong();
                    pageable.set(ValueLayout.JAVA_LONG_UNALIGNED, o, v);
                    pinned.set(ValueLayout.JAVA_LONG_UNALIGNED, o, v);
                }
                for (long size : SIZES) {
                    for (boolean toDevice : new boolean[] {true, false}) {
                        for (boolean locked : new boolean[] {true, false}) {
                            MemorySegment host = locked ? pinned : pageable;
                            Sample s = Trials.sample(rounds, () -> gbPerSecond(cuda, host, device, size, toDevice));
                            String name = "cuda_" + (toDevice ? "host_to_device" : "device_to_host") + "_"
                                    + (locked ? "pinned" : "pageable") + "_" + label(size);
                            figures.add(Figure.sampled(name, "GB/s", "the host link the models assume (PCIe 5.0 x16)", s,
                                    LinkCostModel.PCIE_GEN5_BYTES_PER_SECOND / 1e9, ">= 0")
                                    .withNote(String.format(Locale.ROOT, "%d synchronous copies of %s a round, %s host memory; "
                                            + "information", workingSet / size, label(size), locked ? "page-locked" : "pageable")));
                        }
                    }
                }
            } finally {
                cuda.freePinnedHost(pinned);
                cuda.freeDevice(device);
            }
        } finally {
            cuda.releasePrimaryContext(0);
        }
        return figures;
    }

    /** One round: the whole of {@code host} copied to or from {@code device} in copies of {@code size}; GB/s. */
    private static double gbPerSecond(CudaDriver cuda, MemorySegment host, long device, long size, boolean toDevice) {
        long n = host.byteSize() / size;
        long start = System.nanoTime();
        for (long i = 0; i < n; i++) {
            MemorySegment part = host.asSlice(i * size, size);
            if (toDevice) {
                cuda.copyHostToDevice(part, device + i * size);
            } else {
                cuda.copyDeviceToHost(device + i * size, part);
            }
        }
        cuda.synchronize();
        return n * size / (double) (System.nanoTime() - start); // bytes per ns = GB/s
    }

    private static String label(long size) {
        return size >= Sizes.MiB ? (size / Sizes.MiB) + "MiB" : (size / Sizes.KiB) + "KiB";
    }

    /** Prints the figures of a full run (or {@code --quick}) on this machine, one per line, then the notes. */
    public static void main(String[] args) {
        List<String> notes = new ArrayList<>();
        for (Figure f : figures(args.length > 0 && args[0].equals("--quick"), notes)) {
            System.out.printf(Locale.ROOT, "%-40s %8.2f GB/s [%.2f, %.2f]  %.3f of the modelled link%n", f.name(), f.value(),
                    f.valueLow(), f.valueHigh(), f.ratio());
        }
        notes.forEach(n -> System.out.println("note: " + n));
    }
}
