package dev.strata.node.rpc;

import static dev.strata.node.rpc.RpcRegionLayout.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The handoff of one request and its response through a slot (layout in {@link RpcRegionLayout}).
 *
 * <p>Design note: each direction is a single-writer publication. The client writes opcode, args
 * and payload with plain stores, then release-stores the request tag; the server acquire-loads the
 * tag, and only when it equals the tag it expects reads the fields. The server answers the same
 * way through the response line and the response tag, and the client accepts a response only when
 * the acquire-loaded response tag equals the tag of the request it waits for. A slot is reused
 * only after the client took its response, so each side writes a line only while the other side
 * does not read it. Tags never repeat within an attach and differ between attaches, so a stale
 * response (an earlier turn of the ring, an earlier client) is never accepted.
 *
 * <p>Stateless; the caller keeps the single-writer rule (one client thread per channel, one
 * server thread per region).
 */
final class SlotProtocol {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong PLAIN_LONG = ValueLayout.JAVA_LONG;

    private SlotProtocol() {
    }

    /** Client: writes a request into the slot at {@code slot} and publishes it under {@code tag}. */
    static void postRequest(MemorySegment region, long slot, long tag, int opcode, int payloadLength,
                            long a0, long a1, long a2, long a3, long a4, long a5) {
        region.set(INT, slot + OPCODE_OFFSET, opcode);
        region.set(INT, slot + REQUEST_PAYLOAD_LENGTH_OFFSET, payloadLength);
        long args = slot + REQUEST_ARGS_OFFSET;
        region.set(PLAIN_LONG, args, a0);
        region.set(PLAIN_LONG, args + 8, a1);
        region.set(PLAIN_LONG, args + 16, a2);
        region.set(PLAIN_LONG, args + 24, a3);
        region.set(PLAIN_LONG, args + 32, a4);
        region.set(PLAIN_LONG, args + 40, a5);
        LONG.setRelease(region, slot + REQUEST_TAG_OFFSET, tag);
    }

    /** Server: true if the slot holds the request published under {@code tag} (acquire). */
    static boolean requestReady(MemorySegment region, long slot, long tag) {
        return (long) LONG.getAcquire(region, slot + REQUEST_TAG_OFFSET) == tag;
    }

    /** Server: publishes the response fields written so far under {@code tag} (release). */
    static void publishResponse(MemorySegment region, long slot, long tag) {
        LONG.setRelease(region, slot + RESPONSE_TAG_OFFSET, tag);
    }

    /** Client: true if the slot holds the response to the request with {@code tag} (acquire). */
    static boolean responseReady(MemorySegment region, long slot, long tag) {
        return (long) LONG.getAcquire(region, slot + RESPONSE_TAG_OFFSET) == tag;
    }

    static int opcode(MemorySegment region, long slot) {
        return region.get(INT, slot + OPCODE_OFFSET);
    }

    static int requestPayloadLength(MemorySegment region, long slot) {
        return region.get(INT, slot + REQUEST_PAYLOAD_LENGTH_OFFSET);
    }

    static long arg(MemorySegment region, long slot, int i) {
        return region.get(PLAIN_LONG, slot + REQUEST_ARGS_OFFSET + 8L * i);
    }

    static void status(MemorySegment region, long slot, int status) {
        region.set(INT, slot + STATUS_OFFSET, status);
    }

    static int status(MemorySegment region, long slot) {
        return region.get(INT, slot + STATUS_OFFSET);
    }

    static void responsePayloadLength(MemorySegment region, long slot, int length) {
        region.set(INT, slot + RESPONSE_PAYLOAD_LENGTH_OFFSET, length);
    }

    static int responsePayloadLength(MemorySegment region, long slot) {
        return region.get(INT, slot + RESPONSE_PAYLOAD_LENGTH_OFFSET);
    }

    static void value(MemorySegment region, long slot, int i, long v) {
        region.set(PLAIN_LONG, slot + RESPONSE_VALUES_OFFSET + 8L * i, v);
    }

    static long value(MemorySegment region, long slot, int i) {
        return region.get(PLAIN_LONG, slot + RESPONSE_VALUES_OFFSET + 8L * i);
    }

    /** Clears both tags of a slot (server, while the channel is DETACHING and nobody posts). */
    static void clear(MemorySegment region, long slot) {
        LONG.setRelease(region, slot + REQUEST_TAG_OFFSET, 0L);
        LONG.setRelease(region, slot + RESPONSE_TAG_OFFSET, 0L);
    }
}
