package dev.strata.node.peer;

import dev.strata.node.shm.ShmFiles;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Reads lending-file headers. Stateless; any thread. */
final class LendingFiles {
    private LendingFiles() {
    }

    /** The header of a file, and the file's size. */
    record Found(LendingFileLayout.Header header, long fileSize) {
    }

    /** Reads the header; a file shorter than the header reads as all zero beyond its end. */
    static Found readHeader(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            return readHeader(ch);
        }
    }

    /** Reads the header of the open file {@code ch}. */
    static Found readHeader(FileChannel ch) throws IOException {
        return new Found(LendingFileLayout.Header.of(ShmFiles.readPrefix(ch, (int) LendingFileLayout.HEADER_SIZE)), ch.size());
    }
}
