package dev.strata.node.rpc;

import dev.strata.node.shm.ShmFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Reads region headers and maps region files. Stateless; any thread. */
final class RegionFiles {
    private RegionFiles() {
    }

    /** The header of the file at {@code path}, and the file's size. */
    record Found(RpcRegionLayout.Header header, long fileSize) {
    }

    /** Reads the header; a file shorter than the header reads as all zero beyond its end. */
    static Found readHeader(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            return readHeader(ch);
        }
    }

    /** Reads the header of the open file {@code ch}. */
    static Found readHeader(FileChannel ch) throws IOException {
        return new Found(RpcRegionLayout.Header.of(ShmFiles.readPrefix(ch, (int) RpcRegionLayout.HEADER_SIZE)), ch.size());
    }

    /** Maps {@code size} bytes of the open file {@code ch} read-write, shared, into {@code arena}. */
    static MemorySegment map(FileChannel ch, long size, Arena arena) throws IOException {
        return ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
    }
}
