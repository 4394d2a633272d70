package dev.strata.node.peer;

import java.io.InputStream;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Child JVM: a peer agent lending {@code args[1]} regions of {@code args[2]} bytes at file
 * {@code args[0]}, its demand read from the file {@code args[3]}, grace {@code args[4]} ms, ticking every {@code args[5]} ms (2 when absent). Stops
 * when its standard input closes.
 */
public final class PeerAgentMain {
    private PeerAgentMain() {
    }

    public static void main(String[] args) throws Exception {
        long regions = Long.parseLong(args[1]);
        long regionSize = Long.parseLong(args[2]);
        PeerAgent agent = PeerAgent.start(PeerAgentConfig.builder().file(Path.of(args[0])).budget(regions * regionSize)
                .regionSize(regionSize).demand(new FileDemand(Path.of(args[3])))
                .grace(Duration.ofMillis(Long.parseLong(args[4]))).tick(Duration.ofMillis(args.length > 5 ? Long.parseLong(args[5]) : 2)).conclude(), System.out);
        InputStream in = System.in;
        while (in.read() >= 0) {
            // until the test closes our input
        }
        agent.close();
        System.exit(0);
    }
}
