/* walk: a guest that walks a directory tree as real tools do, for the
 * mount tests (not a kernel): it lists ROOT (argv[1], default /data)
 * depth first with scandir (wasi-libc's opendir and readdir), stats each
 * entry relative to its directory's descriptor (fstatat), and asks each
 * directory's descriptor for its "..", as a recent wasi-libc's readdir
 * does for an entry with no inode number and getcwd-like walks do,
 * checking that it is the parent it came from. Then it resolves a few
 * paths with ".." in them. One line for each thing; errors are printed as
 * WASI errnos (wasi-libc's errno values: 44 ENOENT, 54 ENOTDIR, 63 EPERM),
 * never fatal. No inode numbers are printed, only whether two agree. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int skip_dots(const struct dirent *e) {
	return strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
}

/* walk lists dir, whose own inode is ino and whose parent's is parent. */
static void walk(const char *dir, ino_t ino, ino_t parent, int depth) {
	struct dirent **list;
	int n = scandir(dir, &list, skip_dots, alphasort);
	if (n < 0) {
		printf("scandir %s: errno %d\n", dir, errno);
		return;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		printf("open %s: errno %d\n", dir, errno);
		return;
	}
	struct stat st;
	if (fstatat(dfd, ".", &st, 0) != 0)
		printf("%s .: errno %d\n", dir, errno);
	else
		printf("%s .: %s\n", dir, st.st_ino == ino ? "itself" : "another directory");
	if (fstatat(dfd, "..", &st, 0) != 0)
		printf("%s ..: errno %d\n", dir, errno);
	else
		printf("%s ..: %s\n", dir, parent && st.st_ino == parent ? "its parent" : "another directory");
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, name);
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			printf("%*s%s: errno %d\n", 2 * depth, "", name, errno);
		} else if (S_ISDIR(st.st_mode)) {
			printf("%*s%s/\n", 2 * depth, "", name);
			walk(path, st.st_ino, ino, depth + 1);
		} else if (S_ISLNK(st.st_mode)) {
			printf("%*s%s@\n", 2 * depth, "", name);
		} else {
			printf("%*s%s %lld\n", 2 * depth, "", name, (long long)st.st_size);
		}
		free(list[i]);
	}
	free(list);
	close(dfd);
}

/* same reports whether path stats as the same file as other. */
static void same(const char *path, const char *other) {
	struct stat a, b;
	if (stat(path, &a) != 0) {
		printf("stat %s: errno %d\n", path, errno);
		return;
	}
	if (stat(other, &b) != 0) {
		printf("stat %s: errno %d\n", other, errno);
		return;
	}
	printf("stat %s: %s %s\n", path, a.st_ino == b.st_ino ? "is" : "is not", other);
}

/* cat prints what path holds, opened at dirfd (AT_FDCWD: by path). */
static void cat(int dirfd, const char *label, const char *path) {
	int fd = openat(dirfd, path, O_RDONLY);
	if (fd < 0) {
		printf("open %s: errno %d\n", label, errno);
		return;
	}
	char buf[64];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	printf("open %s: %s\n", label, buf);
}

int main(int argc, char **argv) {
	const char *root = argc > 1 ? argv[1] : "/data";
	struct stat st;
	if (stat(root, &st) != 0) {
		printf("stat %s: errno %d\n", root, errno);
		return 1;
	}
	walk(root, st.st_ino, 0, 1);

	char a[512], b[512];
	snprintf(a, sizeof a, "%s/a/..", root);
	same(a, root);
	snprintf(a, sizeof a, "%s/a/b/..", root);
	snprintf(b, sizeof b, "%s/a", root);
	same(a, b);
	snprintf(a, sizeof a, "%s/.", root);
	same(a, root);
	snprintf(a, sizeof a, "%s/..", root);
	same(a, root);
	snprintf(a, sizeof a, "%s/a/../c/f.txt", root);
	cat(AT_FDCWD, a, a);

	snprintf(a, sizeof a, "%s/a/b", root);
	int dfd = open(a, O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		printf("open %s: errno %d\n", a, errno);
		return 0;
	}
	cat(dfd, "a/b + ../../c/f.txt", "../../c/f.txt");
	cat(dfd, "a/b + ../../../secret", "../../../secret");
	DIR *d = fdopendir(dfd); /* readdir of a/b's "..": its parent, a */
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, "..") == 0)
			printf("readdir a/b ..: %s\n", e->d_type == DT_DIR ? "a directory" : "not a directory");
	if (d)
		closedir(d);
	return 0;
}
