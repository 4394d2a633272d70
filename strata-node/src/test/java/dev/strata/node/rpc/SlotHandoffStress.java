package dev.strata.node.rpc;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;

/**
 * JCStress tests of the RPC slot handoff ({@link SlotProtocol}, {@link RpcResponse#fill}) on the
 * real code, over one heap-backed slot (the code is the same for a mapped region).
 *
 * <p>Run in the regular suite in JCStress's quick mode by {@code SlotHandoffStressTest}.
 */
public final class SlotHandoffStress {
    static final int PAYLOAD = 64; // bytes per direction
    static final long SLOT_SIZE = RpcRegionLayout.SLOT_HEADER_SIZE + 2L * PAYLOAD;
    static final long OLD_TAG = RpcRegionLayout.tag(3, 5);       // request 5 of incarnation 3
    static final long NEW_TAG = RpcRegionLayout.tag(3, 5 + 8);   // the same slot one turn of an 8-slot ring later
    static final long OTHER_ATTACH_TAG = RpcRegionLayout.tag(4, 5); // the same sequence, the next attach

    private SlotHandoffStress() {
    }

    static MemorySegment slot() {
        return MemorySegment.ofArray(new long[(int) (SLOT_SIZE / 8)]);
    }

    static long pattern(long seed, int i) {
        long x = seed * 0x9E3779B97F4A7C15L + i * 0xC2B2AE3D27D4EB4FL;
        return x ^ (x >>> 29) | 1;
    }

    /** A server that sees a request's tag sees all of its fields. */
    @JCStressTest
    @Outcome(id = "0", expect = ACCEPTABLE, desc = "request not visible yet")
    @Outcome(id = "1", expect = ACCEPTABLE_INTERESTING, desc = "request visible with every field")
    @Outcome(id = "2", expect = FORBIDDEN, desc = "tag visible before the fields: torn request")
    @State
    public static class Request {
        final MemorySegment slot = slot();

        @Actor
        public void client() {
            slot.set(ValueLayout.JAVA_LONG, RpcRegionLayout.REQUEST_PAYLOAD_OFFSET, pattern(9, 9));
            SlotProtocol.postRequest(slot, 0, NEW_TAG, 77, 8, pattern(1, 0), pattern(1, 1), pattern(1, 2),
                    pattern(1, 3), pattern(1, 4), pattern(1, 5));
        }

        @Actor
        public void server(I_Result r) {
            if (!SlotProtocol.requestReady(slot, 0, NEW_TAG)) {
                r.r1 = 0;
                return;
            }
            boolean whole = SlotProtocol.opcode(slot, 0) == 77 && SlotProtocol.requestPayloadLength(slot, 0) == 8
                    && slot.get(ValueLayout.JAVA_LONG, RpcRegionLayout.REQUEST_PAYLOAD_OFFSET) == pattern(9, 9);
            for (int i = 0; i < RpcRegionLayout.ARGS; i++) {
                whole &= SlotProtocol.arg(slot, 0, i) == pattern(1, i);
            }
            r.r1 = whole ? 1 : 2;
        }
    }

    /**
     * The slot still holds the response of its previous turn (and the client that waits knows
     * only the new tag): the client takes nothing until the new response is published, then all
     * of it, never the stale values or a mix.
     */
    @JCStressTest
    @Outcome(id = "0", expect = ACCEPTABLE, desc = "new response not visible yet; the stale one was not taken")
    @Outcome(id = "1", expect = ACCEPTABLE_INTERESTING, desc = "new response taken whole")
    @Outcome(id = "2", expect = FORBIDDEN, desc = "a stale or mixed response was taken")
    @State
    public static class StaleResponse {
        final MemorySegment slot = slot();
        final MemorySegment payload = slot.asSlice(RpcRegionLayout.SLOT_HEADER_SIZE + PAYLOAD, PAYLOAD);
        final RpcResponse response = new RpcResponse(PAYLOAD);

        public StaleResponse() {
            writeResponse(1, 11); // the previous turn's answer, published
            SlotProtocol.publishResponse(slot, 0, OLD_TAG);
        }

        void writeResponse(long seed, int status) {
            SlotProtocol.status(slot, 0, status);
            for (int i = 0; i < RpcRegionLayout.ARGS; i++) {
                SlotProtocol.value(slot, 0, i, pattern(seed, i));
            }
            payload.set(ValueLayout.JAVA_LONG, 0, pattern(seed, 99));
            payload.set(ValueLayout.JAVA_LONG, 40, pattern(seed, 98));
            SlotProtocol.responsePayloadLength(slot, 0, (int) (48 + seed));
        }

        @Actor
        public void server() {
            writeResponse(2, 22);
            SlotProtocol.publishResponse(slot, 0, NEW_TAG);
        }

        @Actor
        public void client(I_Result r) {
            if (!SlotProtocol.responseReady(slot, 0, NEW_TAG) && !SlotProtocol.responseReady(slot, 0, OTHER_ATTACH_TAG)) {
                r.r1 = 0;
                return;
            }
            response.fill(slot, 0, 13, payload);
            boolean whole = response.status() == 22 && response.payloadLength() == 50
                    && response.payload().get(ValueLayout.JAVA_LONG, 0) == pattern(2, 99)
                    && response.payload().get(ValueLayout.JAVA_LONG, 40) == pattern(2, 98);
            for (int i = 0; i < RpcRegionLayout.ARGS; i++) {
                whole &= response.value(i) == pattern(2, i);
            }
            r.r1 = whole ? 1 : 2;
        }
    }
}
