package dev.strata.node.rpc;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A response taken from a slot: status, six values and a copy of the payload. Reused by its owner
 * for every response (no allocation per request); the payload buffer is allocated once.
 *
 * <p>Not thread-safe: one per client thread.
 */
public final class RpcResponse {
    private final long[] values = new long[RpcRegionLayout.ARGS];
    private final MemorySegment payload;
    private int status;
    private int payloadLength;
    private long sequence = -1;

    /** A response able to hold payloads of up to {@code payloadCapacity} bytes. */
    public RpcResponse(int payloadCapacity) {
        this.payload = Arena.ofAuto().allocate(Math.max(8, payloadCapacity), 64);
    }

    void fill(MemorySegment region, long slot, long sequence, MemorySegment slotPayload) {
        this.sequence = sequence;
        this.status = SlotProtocol.status(region, slot);
        for (int i = 0; i < values.length; i++) {
            values[i] = SlotProtocol.value(region, slot, i);
        }
        int len = SlotProtocol.responsePayloadLength(region, slot);
        if (len < 0 || len > slotPayload.byteSize() || len > payload.byteSize()) {
            throw new IllegalStateException("response payload length " + len + " exceeds the slot's "
                    + slotPayload.byteSize() + " bytes or this response's " + payload.byteSize());
        }
        this.payloadLength = len;
        if (len > 0) {
            MemorySegment.copy(slotPayload, 0, payload, 0, len);
        }
    }

    void fail(int status, long sequence) {
        this.sequence = sequence;
        this.status = status;
        this.payloadLength = 0;
        java.util.Arrays.fill(values, 0L);
    }

    /** {@link RpcStatus#OK}, a handler's own status, or a negative transport status. */
    public int status() {
        return status;
    }

    /** Response value {@code i}, 0 to 5. */
    public long value(int i) {
        return values[i];
    }

    public int payloadLength() {
        return payloadLength;
    }

    /** The payload buffer; the first {@link #payloadLength()} bytes are the response's. */
    public MemorySegment payload() {
        return payload;
    }

    /** The sequence number of the request this answers. */
    public long sequence() {
        return sequence;
    }

    @Override
    public String toString() {
        return "RpcResponse[seq " + sequence + ", " + RpcStatus.name(status) + ", values " + java.util.Arrays.toString(values)
                + ", payload " + payloadLength + " B]";
    }
}
