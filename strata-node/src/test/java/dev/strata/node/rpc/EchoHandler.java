package dev.strata.node.rpc;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A handler for tests: opcode 1 answers (a0 + 1, a1 * 3, a2 ^ a3, channel) and echoes the payload
 * reversed; opcode 2 throws; opcode 3 sleeps a0 ms then answers; opcode 4 answers status a0;
 * any other opcode is {@link RpcStatus#UNKNOWN_OPCODE}.
 */
final class EchoHandler implements RpcHandler {
    static final int ECHO = 1;
    static final int FAIL = 2;
    static final int SLEEP = 3;
    static final int STATUS = 4;

    @Override
    public void handle(RpcCall call) {
        switch (call.opcode()) {
            case ECHO -> {
                call.value(0, call.arg(0) + 1).value(1, call.arg(1) * 3).value(2, call.arg(2) ^ call.arg(3))
                        .value(3, call.channel()).value(5, call.arg(5));
                int len = call.requestPayloadLength();
                MemorySegment in = call.requestPayload();
                MemorySegment out = call.responsePayload();
                for (int i = 0; i < len; i++) {
                    out.set(ValueLayout.JAVA_BYTE, i, in.get(ValueLayout.JAVA_BYTE, len - 1 - i));
                }
                call.responsePayloadLength(len);
            }
            case FAIL -> throw new IllegalStateException("handler failure on purpose");
            case SLEEP -> {
                try {
                    Thread.sleep(call.arg(0));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                call.value(0, call.arg(0));
            }
            case STATUS -> call.status((int) call.arg(0));
            default -> call.status(RpcStatus.UNKNOWN_OPCODE);
        }
    }
}
