// Make tests/data/minecraft/lz4/: two of querz/'s real chunks compressed
// with LZ4 as Minecraft 1.20.5+ stores them (region-file-compression=lz4,
// compression type 4), by lz4-java's own LZ4BlockOutputStream, the class
// the game uses (Debian: apt install liblz4-java default-jdk-headless):
//
//   java -cp /usr/share/java/lz4-java.jar contrib/mc-make-lz4-world.java [OUT]
//
// * region/r.-1.-1.mca: chunk -8,-12 (1.18), type 4 in the region file;
// * region/r.15.-9.mca: chunk 483,-263 (1.18) stored outside the region
//   file, as the game stores a chunk of 1 MiB or more: the header's entry
//   is a 1-byte body with type 4 + 128 and the LZ4 stream is in
//   region/c.483.-263.mcc (this chunk is small; the layout is the game's);
// * two-chunks.lz4: both chunks' NBT, one after the other (100 KB), as one
//   stream: two blocks.
//
// The chunks' NBT is copied unchanged (as querz/ stores it, inflated); the
// region layout (8 KiB header, 4 KiB sectors) is written here as the game
// writes it. level.dat is querz/'s.
import java.io.*;
import java.nio.file.*;
import java.util.zip.GZIPInputStream;
import java.util.zip.InflaterInputStream;
import net.jpountz.lz4.LZ4BlockOutputStream;

public class McMakeLz4World {
    static byte[] chunkNbt(Path region, int x, int z) throws IOException {
        byte[] f = Files.readAllBytes(region);
        int i = 4 * (Math.floorMod(x, 32) + 32 * Math.floorMod(z, 32));
        int sector = ((f[i] & 0xff) << 16) | ((f[i + 1] & 0xff) << 8) | (f[i + 2] & 0xff);
        int at = sector * 4096;
        int len = ((f[at] & 0xff) << 24) | ((f[at + 1] & 0xff) << 16) | ((f[at + 2] & 0xff) << 8) | (f[at + 3] & 0xff);
        InputStream body = new ByteArrayInputStream(f, at + 5, len - 1);
        InputStream in = switch (f[at + 4]) {
            case 1 -> new GZIPInputStream(body);
            case 2 -> new InflaterInputStream(body);
            case 3 -> body;
            default -> throw new IOException(region + ": chunk " + x + "," + z + ": compression " + f[at + 4]);
        };
        try (in) {
            return in.readAllBytes();
        }
    }

    static byte[] lz4(byte[] nbt) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (LZ4BlockOutputStream s = new LZ4BlockOutputStream(out)) {
            s.write(nbt);
        }
        return out.toByteArray();
    }

    /** A region file holding one chunk at sector 2 (`body` empty: external). */
    static void writeRegion(Path path, int x, int z, int type, byte[] body) throws IOException {
        int sectors = (4 + 1 + body.length + 4095) / 4096;
        byte[] f = new byte[(2 + sectors) * 4096];
        int i = 4 * (Math.floorMod(x, 32) + 32 * Math.floorMod(z, 32));
        f[i + 2] = 2;
        f[i + 3] = (byte) sectors;
        int stamp = 1_700_000_000;
        for (int k = 0; k < 4; k++) f[4096 + i + k] = (byte) (stamp >>> (24 - 8 * k));
        int len = body.length + 1;
        for (int k = 0; k < 4; k++) f[8192 + k] = (byte) (len >>> (24 - 8 * k));
        f[8192 + 4] = (byte) type;
        System.arraycopy(body, 0, f, 8192 + 5, body.length);
        Files.write(path, f);
    }

    public static void main(String[] args) throws IOException {
        Path here = Paths.get(System.getProperty("user.dir"));
        Path src = here.resolve("tests/data/minecraft/querz");
        Path out = args.length > 0 ? Paths.get(args[0]) : here.resolve("tests/data/minecraft/lz4");
        Files.createDirectories(out.resolve("region"));
        Files.copy(src.resolve("level.dat"), out.resolve("level.dat"), StandardCopyOption.REPLACE_EXISTING);
        byte[] a = chunkNbt(src.resolve("region/r.-1.-1.mca"), -8, -12);
        writeRegion(out.resolve("region/r.-1.-1.mca"), -8, -12, 4, lz4(a));
        byte[] b = chunkNbt(src.resolve("region/r.15.-9.mca"), 483, -263);
        writeRegion(out.resolve("region/r.15.-9.mca"), 483, -263, 4 | 128, new byte[0]);
        Files.write(out.resolve("region/c.483.-263.mcc"), lz4(b));
        // Both NBTs one after the other, over 64 KiB: a stream of two blocks.
        byte[] both = new byte[a.length + b.length];
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        Files.write(out.resolve("two-chunks.lz4"), lz4(both));
        System.out.println("chunk -8,-12: " + a.length + " bytes of NBT; chunk 483,-263: " + b.length);
    }
}
