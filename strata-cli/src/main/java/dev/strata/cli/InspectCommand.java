package dev.strata.cli;

import dev.strata.cache.config.StrataConfig;
import dev.strata.memory.TierIoException;
import dev.strata.memory.pool.PoolFormatException;
import dev.strata.memory.pool.PoolHeader;
import dev.strata.memory.pool.PoolInspector;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code strata inspect ...}: shows configuration and on-disk or in-pool state without changing it. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Shows Strata's state without changing it.",
        subcommands = {InspectCommand.Config.class, InspectCommand.Pool.class})
final class InspectCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /** {@code strata inspect config}: the configuration after file, environment and flags, checked. */
    @Command(name = "config", mixinStandardHelpOptions = true,
            description = "Prints the configuration after the file, STRATA_SET and --set are applied and checked.")
    static final class Config implements Callable<Integer> {
        @Mixin
        ConfigOptions options;

        @Override
        public Integer call() {
            StrataConfig c = options.load();
            System.out.println("device:   " + (c.device() == null ? "-" : c.device()));
            System.out.println("host:     " + (c.host() == null ? "-" : c.host()));
            System.out.println("pool:     " + (c.pool() == null ? "-" : c.pool()));
            System.out.println("disk:     " + (c.disk() == null ? "-" : c.disk()));
            System.out.println("store:    " + c.store());
            System.out.println("transfer: " + c.transfer());
            System.out.println("configuration is valid");
            return 0;
        }
    }

    /**
     * {@code strata inspect pool PATH...}: a pool's header, processes and occupancy, read without
     * attaching to it (read-only mapping, no process slot; see {@link PoolInspector}).
     */
    @Command(name = "pool", mixinStandardHelpOptions = true,
            description = "Prints a pool's header, process table and occupancy without attaching to it.")
    static final class Pool implements Callable<Integer> {
        @Parameters(arity = "1..*", paramLabel = "PATH",
                description = "The pool file or device; for a striped pool, every device in stripe order.")
        List<Path> paths;

        @Override
        public Integer call() {
            PoolInspector.Report r;
            try {
                r = PoolInspector.inspect(paths);
            } catch (PoolFormatException | TierIoException e) {
                System.err.println("strata: " + e.getMessage());
                return 2;
            }
            PoolHeader.Layout l = r.layout();
            PoolInspector.Occupancy o = r.occupancy();
            System.out.printf("pool '%s' at %s%n", r.name(), r.paths());
            System.out.printf("  magic          0x%016x%n", r.magic());
            System.out.printf("  version        %d.%d%n", r.major(), r.minor());
            System.out.printf("  created        %s%n", Instant.ofEpochMilli(r.createdAtMillis()));
            System.out.printf("  capacity       %d bytes (%s)%n", l.dataCapacity(), human(l.dataCapacity()));
            System.out.printf("  chunk size     %d bytes%n", l.chunkSize());
            System.out.printf("  chunk count    %d%n", l.chunkCount());
            System.out.printf("  devices        %d (stripe %s)%n", l.deviceCount(), human(PoolHeader.STRIPE_SIZE));
            System.out.printf("  process slots  %d%n", l.processSlots());
            System.out.printf("  creator        pid %d, %s, heartbeat %s ago%n", r.creatorPid(),
                    r.creatorAlive() ? "alive" : "dead", age(r.creatorHeartbeatAgeMillis()));
            System.out.printf("processes (%d of %d slots occupied)%n", r.processes().size(), l.processSlots());
            if (r.processes().isEmpty()) {
                System.out.println("  none");
            }
            for (PoolInspector.ProcessEntry p : r.processes()) {
                System.out.printf("  slot %-4d pid %-8d %-5s %-10s heartbeat %s ago, incarnation %d%n", p.slot(), p.pid(),
                        p.alive() ? "alive" : "DEAD", p.state(), age(p.heartbeatAgeMillis()), p.incarnation());
            }
            System.out.println("occupancy");
            System.out.printf("  chunks FREE %d, WRITING %d, PUBLISHED %d, FREEING %d%s%n", o.freeChunks(),
                    o.writingChunks(), o.publishedChunks(), o.freeingChunks(),
                    o.claimingChunks() == 0 ? "" : ", being claimed " + o.claimingChunks());
            System.out.printf("  used           %d bytes (%s, %.1f%%); counter says %d bytes%n", o.usedBytes(),
                    human(o.usedBytes()), 100.0 * o.usedBytes() / Math.max(1, l.dataCapacity()), o.countedUsedBytes());
            System.out.printf("  objects        %d published, %d being written%n", o.objectsPublished(), o.allocationsWriting());
            return 0;
        }

        private static String human(long bytes) {
            String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
            double v = bytes;
            int u = 0;
            while (v >= 1024 && u < units.length - 1) {
                v /= 1024;
                u++;
            }
            return u == 0 ? bytes + " B" : String.format("%.1f %s", v, units[u]);
        }

        private static String age(long millis) {
            return millis < 10_000 ? millis + " ms" : String.format("%.1f s", millis / 1000.0);
        }
    }
}
