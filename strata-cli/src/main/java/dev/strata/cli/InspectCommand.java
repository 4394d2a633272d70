package dev.strata.cli;

import dev.strata.cache.config.StrataConfig;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code strata inspect ...}: shows configuration and on-disk or in-pool state without changing it. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Shows Strata's state without changing it.",
        subcommands = {InspectCommand.Config.class})
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
}
