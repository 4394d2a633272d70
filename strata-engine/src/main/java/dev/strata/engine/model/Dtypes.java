package dev.strata.engine.model;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Unaligned little-endian layouts for reading and writing weight elements. */
final class Dtypes {
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Dtypes() {
    }
}
