/* replay_main.c: a main() for the fuzz targets when they are built without libFuzzer
 * (gcc, or a plain regression run): calls LLVMFuzzerTestOneInput once per file named
 * on the command line, or per file in a directory named there. Exits 0 when every
 * input ran (a failing check aborts), 2 when an input cannot be read. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT (1u << 20)

/* Run one file. Returns 0, or -1 when it cannot be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        return -1;
    }
    uint8_t *buf = malloc(REPLAY_MAX_INPUT);
    if (buf == NULL) {
        fclose(f);
        return -1;
    }
    size_t n = fread(buf, 1, REPLAY_MAX_INPUT, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    size_t runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "cannot read %s\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]) != 0)
                return 2;
            runs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *de;
        if (d == NULL)
            return 2;
        while ((de = readdir(d)) != NULL) {
            char path[4096];
            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            if (replay_file(path) != 0) {
                closedir(d);
                return 2;
            }
            runs++;
        }
        closedir(d);
    }
    printf("%zu inputs replayed\n", runs);
    return 0;
}
