package dev.strata.node.rpc;

import java.lang.foreign.MemorySegment;

/**
 * The request being served and the response being written: a flyweight over one slot of the
 * region, moved from slot to slot by the server (no allocation per request).
 *
 * <p>Before the handler runs, the response's status is {@link RpcStatus#OK}, its values 0 and its
 * payload empty. The request payload and the response payload are separate areas of
 * {@link #payloadCapacity()} bytes each.
 *
 * <p>Threads: the server's polling thread only; valid only during {@link RpcHandler#handle}.
 */
public final class RpcCall {
    private final MemorySegment region;
    private final int payloadCapacity;
    private int channel;
    private long slot; // offset of the slot in the region
    private MemorySegment requestPayload;
    private MemorySegment responsePayload;

    RpcCall(MemorySegment region, int payloadCapacity) {
        this.region = region;
        this.payloadCapacity = payloadCapacity;
    }

    void bind(int channel, long slot, MemorySegment requestPayload, MemorySegment responsePayload) {
        this.channel = channel;
        this.slot = slot;
        this.requestPayload = requestPayload;
        this.responsePayload = responsePayload;
        SlotProtocol.status(region, slot, RpcStatus.OK);
        SlotProtocol.responsePayloadLength(region, slot, 0);
        for (int i = 0; i < RpcRegionLayout.ARGS; i++) {
            SlotProtocol.value(region, slot, i, 0L);
        }
    }

    /** The channel (client) the request came from. */
    public int channel() {
        return channel;
    }

    public int opcode() {
        return SlotProtocol.opcode(region, slot);
    }

    /** Request argument {@code i}, 0 to 5. */
    public long arg(int i) {
        checkIndex(i);
        return SlotProtocol.arg(region, slot, i);
    }

    /** Bytes of request payload the client sent (checked against the capacity by the server). */
    public int requestPayloadLength() {
        return SlotProtocol.requestPayloadLength(region, slot);
    }

    /** The request payload area ({@link #payloadCapacity()} bytes; the first {@link #requestPayloadLength()} are the client's). */
    public MemorySegment requestPayload() {
        return requestPayload;
    }

    /** The response payload area; set {@link #responsePayloadLength} to the bytes written. */
    public MemorySegment responsePayload() {
        return responsePayload;
    }

    public int payloadCapacity() {
        return payloadCapacity;
    }

    public RpcCall status(int status) {
        SlotProtocol.status(region, slot, status);
        return this;
    }

    /** Sets response value {@code i}, 0 to 5. */
    public RpcCall value(int i, long v) {
        checkIndex(i);
        SlotProtocol.value(region, slot, i, v);
        return this;
    }

    public RpcCall responsePayloadLength(int bytes) {
        if (bytes < 0 || bytes > payloadCapacity) {
            throw new IllegalArgumentException("response payload of " + bytes + " bytes does not fit the slot's "
                    + payloadCapacity + " bytes");
        }
        SlotProtocol.responsePayloadLength(region, slot, bytes);
        return this;
    }

    private static void checkIndex(int i) {
        if (i < 0 || i >= RpcRegionLayout.ARGS) {
            throw new IndexOutOfBoundsException("argument index " + i + " is not in [0, " + RpcRegionLayout.ARGS + ")");
        }
    }
}
