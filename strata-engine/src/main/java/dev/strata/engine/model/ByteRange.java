package dev.strata.engine.model;

import java.nio.file.Path;

/**
 * Where one tensor's bytes lie on disk: a file and an absolute byte range in it. Used to move an
 * expert as one unit (read it from its file, or copy the mapped slice). Immutable.
 *
 * @param tensor the tensor's name
 * @param file   the safetensors file holding it
 * @param offset absolute offset of the first byte in the file (header included before it)
 * @param length bytes
 */
public record ByteRange(String tensor, Path file, long offset, long length) {
}
