package dev.strata.memory.device;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The CUDA driver API calls Strata makes through the Foreign Function &amp; Memory API, bound once
 * from {@code libcuda.so.1} when a machine has one: initialisation, devices and their primary
 * contexts, device and page-locked host allocations, and synchronous copies between them. Every
 * call checks its {@code CUresult} and throws {@link CudaException} naming the call and the
 * driver's name for the error.
 *
 * <p>The building block of a CUDA {@link DeviceBackend} and of the host-link measure of
 * {@code strata bench tiers}; nothing else in Strata needs a GPU. {@link #load()} says why no
 * driver could be bound (no library, no device) instead of failing.
 *
 * <p>Threads: any. A context is current per thread: a thread calls {@link #makeCurrent} with the
 * device's primary context before its first allocation or copy.
 */
@SuppressWarnings("restricted") // the downcalls are made on purpose, with checked arguments
public final class CudaDriver {
    /** The driver library's name as the dynamic linker finds it. */
    public static final String LIBRARY = "libcuda.so.1";

    private static final Linker LINKER = Linker.nativeLinker();
    private static final ValueLayout.OfInt RESULT = ValueLayout.JAVA_INT; // CUresult
    private static final ValueLayout.OfLong SIZE = ValueLayout.JAVA_LONG; // size_t, CUdeviceptr

    private final MethodHandle cuInit;
    private final MethodHandle cuDeviceGetCount;
    private final MethodHandle cuDeviceGet;
    private final MethodHandle cuDeviceGetName;
    private final MethodHandle cuDeviceTotalMem;
    private final MethodHandle cuDevicePrimaryCtxRetain;
    private final MethodHandle cuDevicePrimaryCtxRelease;
    private final MethodHandle cuCtxSetCurrent;
    private final MethodHandle cuCtxSynchronize;
    private final MethodHandle cuMemAlloc;
    private final MethodHandle cuMemFree;
    private final MethodHandle cuMemHostAlloc;
    private final MethodHandle cuMemFreeHost;
    private final MethodHandle cuMemcpyHtoD;
    private final MethodHandle cuMemcpyDtoH;
    private final MethodHandle cuGetErrorName;

    private CudaDriver(SymbolLookup lib) {
        cuInit = bind(lib, "cuInit", RESULT, ValueLayout.JAVA_INT);
        cuDeviceGetCount = bind(lib, "cuDeviceGetCount", RESULT, ValueLayout.ADDRESS);
        cuDeviceGet = bind(lib, "cuDeviceGet", RESULT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
        cuDeviceGetName = bind(lib, "cuDeviceGetName", RESULT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
        cuDeviceTotalMem = bind(lib, "cuDeviceTotalMem_v2", RESULT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
        cuDevicePrimaryCtxRetain = bind(lib, "cuDevicePrimaryCtxRetain", RESULT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
        cuDevicePrimaryCtxRelease = bind(lib, "cuDevicePrimaryCtxRelease_v2", RESULT, ValueLayout.JAVA_INT);
        cuCtxSetCurrent = bind(lib, "cuCtxSetCurrent", RESULT, ValueLayout.ADDRESS);
        cuCtxSynchronize = LINKER.downcallHandle(lib.findOrThrow("cuCtxSynchronize"), FunctionDescriptor.of(RESULT));
        cuMemAlloc = bind(lib, "cuMemAlloc_v2", RESULT, ValueLayout.ADDRESS, SIZE);
        cuMemFree = bind(lib, "cuMemFree_v2", RESULT, SIZE);
        cuMemHostAlloc = bind(lib, "cuMemHostAlloc", RESULT, ValueLayout.ADDRESS, SIZE, ValueLayout.JAVA_INT);
        cuMemFreeHost = bind(lib, "cuMemFreeHost", RESULT, ValueLayout.ADDRESS);
        cuMemcpyHtoD = bind(lib, "cuMemcpyHtoD_v2", RESULT, SIZE, ValueLayout.ADDRESS, SIZE);
        cuMemcpyDtoH = bind(lib, "cuMemcpyDtoH_v2", RESULT, ValueLayout.ADDRESS, SIZE, SIZE);
        cuGetErrorName = bind(lib, "cuGetErrorName", RESULT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS);
    }

    /** The driver, or why there is none to use. */
    public sealed interface Loaded permits Available, Unavailable {
    }

    /** A bound, initialised driver with at least one device. */
    public record Available(CudaDriver driver, int devices) implements Loaded {
    }

    /** Why no driver can be used here, e.g. "libcuda.so.1 not found (no NVIDIA driver)". */
    public record Unavailable(String reason) implements Loaded {
    }

    /**
     * Binds {@link #LIBRARY} and initialises it ({@code cuInit(0)}). Never throws for a machine
     * without a driver or a device: it says why.
     */
    public static Loaded load() {
        SymbolLookup lib;
        try {
            lib = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
        } catch (IllegalArgumentException e) {
            return new Unavailable(LIBRARY + " not found (no NVIDIA driver on this machine)");
        }
        CudaDriver d;
        try {
            d = new CudaDriver(lib);
        } catch (java.util.NoSuchElementException e) {
            return new Unavailable(LIBRARY + " lacks a call Strata binds: " + e.getMessage());
        }
        try (Arena a = Arena.ofConfined()) {
            d.call("cuInit", () -> (int) d.cuInit.invokeExact(0));
            MemorySegment count = a.allocate(ValueLayout.JAVA_INT);
            d.call("cuDeviceGetCount", () -> (int) d.cuDeviceGetCount.invokeExact(count));
            int n = count.get(ValueLayout.JAVA_INT, 0);
            return n > 0 ? new Available(d, n) : new Unavailable(LIBRARY + " reports no CUDA device");
        } catch (CudaException e) {
            return new Unavailable(e.getMessage());
        }
    }

    /** The name of device {@code ordinal}, e.g. "NVIDIA H100 80GB HBM3". */
    public String deviceName(int ordinal) {
        int device = device(ordinal);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment name = a.allocate(256);
            call("cuDeviceGetName", () -> (int) cuDeviceGetName.invokeExact(name, 256, device));
            return name.getString(0, StandardCharsets.UTF_8);
        }
    }

    /** Bytes of memory on device {@code ordinal}. */
    public long deviceMemoryBytes(int ordinal) {
        int device = device(ordinal);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bytes = a.allocate(SIZE);
            call("cuDeviceTotalMem", () -> (int) cuDeviceTotalMem.invokeExact(bytes, device));
            return bytes.get(SIZE, 0);
        }
    }

    /** Retains device {@code ordinal}'s primary context; pair with {@link #releasePrimaryContext}. */
    public MemorySegment retainPrimaryContext(int ordinal) {
        int device = device(ordinal);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ctx = a.allocate(ValueLayout.ADDRESS);
            call("cuDevicePrimaryCtxRetain", () -> (int) cuDevicePrimaryCtxRetain.invokeExact(ctx, device));
            return ctx.get(ValueLayout.ADDRESS, 0);
        }
    }

    /** Releases a retain of device {@code ordinal}'s primary context. */
    public void releasePrimaryContext(int ordinal) {
        int device = device(ordinal);
        call("cuDevicePrimaryCtxRelease", () -> (int) cuDevicePrimaryCtxRelease.invokeExact(device));
    }

    /** Makes {@code context} current on the calling thread. */
    public void makeCurrent(MemorySegment context) {
        call("cuCtxSetCurrent", () -> (int) cuCtxSetCurrent.invokeExact(context));
    }

    /**
     * Waits for the current context's work: a copy from pageable host memory may return once its
     * bytes are staged, before they reach the device.
     */
    public void synchronize() {
        call("cuCtxSynchronize", () -> (int) cuCtxSynchronize.invokeExact());
    }

    /** Allocates {@code bytes} of device memory in the current context; returns the device pointer. */
    public long allocateDevice(long bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ptr = a.allocate(SIZE);
            call("cuMemAlloc(" + bytes + " bytes)", () -> (int) cuMemAlloc.invokeExact(ptr, bytes));
            return ptr.get(SIZE, 0);
        }
    }

    /** Frees device memory from {@link #allocateDevice}. */
    public void freeDevice(long devicePointer) {
        call("cuMemFree", () -> (int) cuMemFree.invokeExact(devicePointer));
    }

    /** Allocates {@code bytes} of page-locked host memory in the current context, which copies move at full link speed. */
    public MemorySegment allocatePinnedHost(long bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ptr = a.allocate(ValueLayout.ADDRESS);
            call("cuMemHostAlloc(" + bytes + " bytes)", () -> (int) cuMemHostAlloc.invokeExact(ptr, bytes, 0));
            return ptr.get(ValueLayout.ADDRESS, 0).reinterpret(bytes);
        }
    }

    /** Frees page-locked host memory from {@link #allocatePinnedHost}. */
    public void freePinnedHost(MemorySegment host) {
        call("cuMemFreeHost", () -> (int) cuMemFreeHost.invokeExact(host));
    }

    /** Copies all of {@code src} (host memory) to {@code dst} (a device pointer); returns when done. */
    public void copyHostToDevice(MemorySegment src, long dst) {
        call("cuMemcpyHtoD", () -> (int) cuMemcpyHtoD.invokeExact(dst, src, src.byteSize()));
    }

    /** Fills all of {@code dst} (host memory) from {@code src} (a device pointer); returns when done. */
    public void copyDeviceToHost(long src, MemorySegment dst) {
        call("cuMemcpyDtoH", () -> (int) cuMemcpyDtoH.invokeExact(dst, src, dst.byteSize()));
    }

    private int device(int ordinal) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment dev = a.allocate(ValueLayout.JAVA_INT);
            call("cuDeviceGet(" + ordinal + ")", () -> (int) cuDeviceGet.invokeExact(dev, ordinal));
            return dev.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** Makes one driver call that returns a {@code CUresult}; throws {@link CudaException} naming {@code name} unless it succeeded. */
    private void call(String name, DriverCall c) {
        int result;
        try {
            result = c.invoke();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("CUDA driver call " + name + " failed", t);
        }
        if (result != 0) {
            throw new CudaException(name + " failed: " + errorName(result) + " (" + result + ")");
        }
    }

    /** One downcall returning its {@code CUresult}. */
    @FunctionalInterface
    private interface DriverCall {
        int invoke() throws Throwable;
    }

    private String errorName(int result) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment name = a.allocate(ValueLayout.ADDRESS);
            if ((int) cuGetErrorName.invokeExact(result, name) != 0) {
                return "CUresult " + result;
            }
            return name.get(ValueLayout.ADDRESS, 0).reinterpret(128).getString(0, StandardCharsets.UTF_8);
        } catch (Throwable t) {
            return "CUresult " + result;
        }
    }

    private static MethodHandle bind(SymbolLookup lib, String name, ValueLayout result, ValueLayout... args) {
        return LINKER.downcallHandle(lib.findOrThrow(name), FunctionDescriptor.of(result, args));
    }

    /** A CUDA driver call returned an error; the message names the call and the driver's error name. */
    public static final class CudaException extends RuntimeException {
        CudaException(String message) {
            super(message);
        }
    }
}
