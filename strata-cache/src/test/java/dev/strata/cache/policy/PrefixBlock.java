package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;
import java.util.ArrayList;
import java.util.List;

/**
 * A block of a prefix tree in one tier, for the prefix policies' tests: its name (the key), its
 * parent, how many requests reached it, and whether the policy under test tracks it now (set by
 * the test before it tells the policy, as a store records residency first). Test thread only.
 */
final class PrefixBlock extends PolicyNode implements PrefixNode {
    final String name;
    final PrefixBlock parent;
    final List<PrefixBlock> children = new ArrayList<>();
    boolean inTier; // tracked by the policy under test
    boolean pinned;
    long reach;

    PrefixBlock(String name, PrefixBlock parent) {
        this(name, parent, 1);
    }

    PrefixBlock(String name, PrefixBlock parent, long reach) {
        this.name = name;
        this.parent = parent;
        this.reach = reach;
        if (parent != null) {
            parent.children.add(this);
        }
    }

    @Override
    public PriorityClass priority() {
        return pinned ? PriorityClass.ACTIVE : PriorityClass.RECENT;
    }

    @Override
    public boolean evictable() {
        return !pinned;
    }

    @Override
    public long keyHash() {
        return name.hashCode() * 0x9E3779B97F4A7C15L;
    }

    @Override
    public PolicyNode prefixParent() {
        return parent != null && parent.inTier ? parent : null;
    }

    @Override
    public int residentPrefixChildren() {
        return trackedChildren();
    }

    @Override
    public long prefixReach() {
        return reach;
    }

    /** Children the policy tracks now. */
    int trackedChildren() {
        return (int) children.stream().filter(c -> c.inTier).count();
    }

    @Override
    public String toString() {
        return name;
    }
}
