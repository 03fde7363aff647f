package mergeablemetrics;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * Writer of core's state frames (core/states/codec.py, version 3):
 * {@code b"MMS" version:u8 | kind:str16 | kind_version:u8 | layout_json:str32 | n_fields:u16 |
 * per field: name:str16 dtype:u8 ndim:u8 shape:u64*ndim raw little-endian | crc32:u32}.
 * Fields are added in the kind's {@code STORED_FIELDS} order: its {@code FIELDS}, then per exact
 * field its {@code .exp} and {@code .limbs} (see {@link #exactLimbs}).
 */
final class StateFrame {
    private static final int VERSION = 3;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream fields = new ByteArrayOutputStream();
    private int nFields;

    StateFrame(String kind, int kindVersion, String layoutJson) {
        out.writeBytes(new byte[] {'M', 'M', 'S', (byte) VERSION});
        str(out, kind, 2);
        out.write(kindVersion);
        str(out, layoutJson, 4);
    }

    private static void str(ByteArrayOutputStream o, String s, int lenBytes) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        le(o, b.length, lenBytes);
        o.writeBytes(b);
    }

    private static void le(ByteArrayOutputStream o, long v, int n) {
        for (int i = 0; i < n; i++) o.write((int) (v >>> (8 * i)) & 0xFF);
    }

    private void header(String name, int code, long[] shape) {
        nFields++;
        str(fields, name, 2);
        fields.write(code);
        fields.write(shape.length);
        for (long s : shape) le(fields, s, 8);
    }

    /** A float64 field of {@code shape} (row-major values). */
    StateFrame f64(String name, long[] shape, double[] v) {
        header(name, 1, shape);
        for (double x : v) le(fields, Double.doubleToRawLongBits(x), 8);
        return this;
    }

    /** An int64 field of {@code shape}. */
    StateFrame i64(String name, long[] shape, long[] v) {
        header(name, 2, shape);
        for (long x : v) le(fields, x, 8);
        return this;
    }

    /** The float64 field of exact sums: its rounded values now; its limbs go in {@link #exactLimbs}. */
    StateFrame exactValues(String name, long[] shape, ExactSum.Encoded e) {
        return f64(name, shape, e.values);
    }

    /** The {@code <name>.exp} () and {@code <name>.limbs} (n,) fields of an exact field. */
    StateFrame exactLimbs(String name, ExactSum.Encoded e) {
        i64(name + ".exp", new long[0], new long[] {e.exp});
        return i64(name + ".limbs", new long[] {e.limbs.length}, e.limbs);
    }

    byte[] finish() {
        le(out, nFields, 2);
        out.writeBytes(fields.toByteArray());
        byte[] body = out.toByteArray();
        CRC32 crc = new CRC32();
        crc.update(body);
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        all.writeBytes(body);
        le(all, crc.getValue(), 4);
        return all.toByteArray();
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) s.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        return s.toString();
    }
}
