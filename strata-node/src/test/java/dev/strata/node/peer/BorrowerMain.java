package dev.strata.node.peer;

import static dev.strata.node.peer.PeerTestSupport.stamp;
import static dev.strata.node.peer.PeerTestSupport.verify;

import dev.strata.cache.peer.LenderEvents;
import dev.strata.cache.peer.LentRegion;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Child JVM: a borrower of the lending file {@code args[0]} in mode {@code args[1]}:
 * <ul>
 *   <li>{@code hold N SIZE}: borrows N leases of SIZE bytes, stamps them, prints {@code borrowed
 *       <heads>}, then verifies them in a loop; acknowledges revocations ({@code acked <head>});</li>
 *   <li>{@code noack SIZE}: borrows one lease, enters it and stays inside, ignoring revocations;
 *       on a line from standard input it verifies the data ({@code intact} or {@code corrupt ...}),
 *       exits and tries to enter again ({@code enter after fence <bool>});</li>
 *   <li>{@code transfer SIZE}: writes and verifies one lease in a loop ({@code transferring});
 *       once the peer is lost it tries 200 more enters ({@code enters after lost <n>}).</li>
 * </ul>
 */
public final class BorrowerMain {
    private BorrowerMain() {
    }

    public static void main(String[] args) throws Exception {
        ShmPeerLender lender = ShmPeerLender.open(Path.of(args[0]), 1);
        ConcurrentHashMap<Long, LentRegion> live = new ConcurrentHashMap<>();
        boolean acknowledge = !args[1].equals("noack");
        lender.listen(new LenderEvents() {
            @Override
            public void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos) {
                say("revoke " + region.lease().region());
                if (acknowledge) {
                    live.remove(region.lease().region());
                    lender.acknowledge(region);
                    say("acked " + region.lease().region());
                }
            }

            @Override
            public void fenced(LentRegion region) {
                live.remove(region.lease().region());
                say("fenced " + region.lease().region());
            }

            @Override
            public void peerLost(int peer) {
                say("lost " + peer); // before the flag: the transfer loop's next line must come after this one
                peerLost = true;
            }
        });
        switch (args[1]) {
            case "hold" -> hold(lender, live, Integer.parseInt(args[2]), Long.parseLong(args[3]));
            case "noack" -> noack(lender, Long.parseLong(args[2]));
            case "transfer" -> transfer(lender, Long.parseLong(args[2]));
            default -> throw new IllegalArgumentException("unknown mode " + args[1]);
        }
    }

    static volatile boolean peerLost;

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void hold(ShmPeerLender lender, ConcurrentHashMap<Long, LentRegion> live, int n, long size) throws Exception {
        StringJoiner heads = new StringJoiner(",");
        List<LentRegion> all = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            LentRegion r = lender.borrow(size);
            if (r == null) {
                say("borrow failed");
                System.exit(3);
            }
            if (!r.enter()) {
                say("enter failed");
                System.exit(3);
            }
            stamp(r.memory(), r.lease().region(), r.lease().epoch(), 1);
            r.exit();
            live.put(r.lease().region(), r);
            all.add(r);
            heads.add(Long.toString(r.lease().region()));
        }
        say("borrowed " + heads);
        while (true) {
            for (LentRegion r : live.values()) {
                if (r.enter()) {
                    try {
                        String problem = verify(r.memory(), r.lease().region(), r.lease().epoch(), 1);
                        if (problem != null) {
                            say("corrupt " + problem);
                            System.exit(4);
                        }
                    } finally {
                        r.exit();
                    }
                }
            }
            Thread.sleep(1);
        }
    }

    private static void noack(ShmPeerLender lender, long size) throws Exception {
        LentRegion r = lender.borrow(size);
        if (r == null || !r.enter()) {
            say("borrow failed");
            System.exit(3);
        }
        stamp(r.memory(), r.lease().region(), r.lease().epoch(), 1);
        say("entered " + r.lease().region() + " " + r.lease().epoch());
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        String problem = verify(r.memory(), r.lease().region(), r.lease().epoch(), 1);
        say(problem == null ? "intact" : "corrupt " + problem);
        r.exit();
        say("enter after fence " + r.enter());
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        lender.close();
    }

    private static void transfer(ShmPeerLender lender, long size) throws Exception {
        LentRegion r = lender.borrow(size);
        if (r == null) {
            say("borrow failed");
            System.exit(3);
        }
        long seq = 0;
        boolean announced = false;
        while (!peerLost) {
            if (r.enter()) {
                try {
                    seq++;
                    stamp(r.memory(), r.lease().region(), r.lease().epoch(), seq);
                    String problem = verify(r.memory(), r.lease().region(), r.lease().epoch(), seq);
                    if (problem != null) {
                        say("corrupt " + problem);
                        System.exit(4);
                    }
                } finally {
                    r.exit();
                }
            }
            if (!announced) {
                announced = true;
                say("transferring");
            }
        }
        int entered = 0;
        for (int i = 0; i < 200; i++) {
            if (r.enter()) {
                entered++;
                r.exit();
            }
        }
        say("enters after lost " + entered + " (" + lender.lostBecause() + ")");
        lender.close();
    }
}
