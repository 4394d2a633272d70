package dev.strata.cluster;

import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.ToByteBufEncoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Encodes the CLUSTER tier's commands straight into the client's command buffers: keys as UTF-8,
 * {@link ClusterValue}s by their bytes, every size exact so that the client writes each argument
 * in place, without a temporary buffer or a growing one. A {@link ClusterValue.Staged} block value
 * is copied from its staging buffer once, with the room for it made in one step.
 *
 * <p>Stateless; any thread (the client's event loops encode, any caller's thread may build
 * arguments).
 */
final class ClusterValueCodec implements RedisCodec<String, ClusterValue>, ToByteBufEncoder<String, ClusterValue> {
    static final ClusterValueCodec INSTANCE = new ClusterValueCodec();

    private ClusterValueCodec() {
    }

    @Override
    public void encodeKey(String key, ByteBuf target) {
        target.writeCharSequence(key, StandardCharsets.UTF_8);
    }

    @Override
    public void encodeValue(ClusterValue value, ByteBuf target) {
        switch (value) {
            case ClusterValue.Bytes b -> target.writeBytes(b.bytes());
            case ClusterValue.Staged s -> {
                int n = s.length();
                target.ensureWritable(n);
                if (s.tryRetain()) {
                    try {
                        target.writeBytes(s.buffer().asByteBuffer());
                    } finally {
                        s.release();
                    }
                } else {
                    target.writeZero(n); // the write ended before it was encoded: a value no reader loads
                }
            }
        }
    }

    @Override
    public int estimateSize(Object keyOrValue) {
        return switch (keyOrValue) {
            case String key -> ByteBufUtil.utf8Bytes(key);
            case ClusterValue v -> v.length();
            default -> throw new IllegalArgumentException("not a cluster key or value: " + keyOrValue.getClass().getName());
        };
    }

    @Override
    public boolean isEstimateExact() {
        return true;
    }

    @Override
    public String decodeKey(ByteBuffer bytes) {
        return StandardCharsets.UTF_8.decode(bytes).toString();
    }

    @Override
    public ClusterValue decodeValue(ByteBuffer bytes) {
        byte[] out = new byte[bytes.remaining()];
        bytes.get(out);
        return new ClusterValue.Bytes(out);
    }

    @Override
    public ByteBuffer encodeKey(String key) {
        return ByteBuffer.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public ByteBuffer encodeValue(ClusterValue value) {
        ByteBuf out = Unpooled.buffer(value.length());
        encodeValue(value, out);
        return out.nioBuffer();
    }
}
