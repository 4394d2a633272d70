package dev.strata.node.rpc;

import java.nio.file.Path;

/**
 * Child JVM client of {@link EchoHandler} at {@code args[1]}.
 *
 * <ul>
 *   <li>{@code steady PATH}: calls ECHO with checked answers until a call fails; prints
 *       {@code ok N} every 500 calls and {@code status NAME} at the end.</li>
 *   <li>{@code slow PATH MS}: posts a request the handler takes MS ms to answer, prints
 *       {@code posted}, waits, prints {@code status NAME}.</li>
 * </ul>
 */
public final class RpcClientMain {
    private RpcClientMain() {
    }

    public static void main(String[] args) {
        Path path = Path.of(args[1]);
        try (RpcClient client = RpcClient.attach(path)) {
            System.out.println("attached " + client.channel());
            RpcResponse r = new RpcResponse(client.payloadCapacity());
            if (args[0].equals("slow")) {
                client.post(EchoHandler.SLEEP, Long.parseLong(args[2]), 0, 0, 0);
                System.out.println("posted");
                System.out.flush();
                System.out.println("status " + RpcStatus.name(client.await(r)));
                return;
            }
            long n = 0;
            while (true) {
                int status = client.call(EchoHandler.ECHO, n, 7, 0, 0, r);
                if (status != RpcStatus.OK) {
                    System.out.println("status " + RpcStatus.name(status));
                    return;
                }
                if (r.value(0) != n + 1 || r.value(1) != 21 || r.value(3) != client.channel()) {
                    System.out.println("wrong " + r);
                    System.exit(4);
                }
                n++;
                if (n % 500 == 0) {
                    System.out.println("ok " + n);
                    System.out.flush();
                }
            }
        }
    }
}
