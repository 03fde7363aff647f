import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;

/** Reads big-endian doubles on stdin; writes StrictMath.log and StrictMath.log1p of each (big-endian). */
public final class StrictLog {
    public static void main(String[] args) throws Exception {
        boolean log1p = args.length > 0 && args[0].equals("log1p");
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
        while (true) {
            double x;
            try {
                x = in.readDouble();
            } catch (EOFException e) {
                break;
            }
            out.writeDouble(log1p ? StrictMath.log1p(x) : StrictMath.log(x));
        }
        out.flush();
    }
}
