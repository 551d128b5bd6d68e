/*
 * tjson.h - just enough JSON for the CLI tests: a strict validator
 * (RFC 8259 syntax) and lookups of "key": value by key name.
 */
#ifndef SDFS_TESTS_CLUSTER_TJSON_H
#define SDFS_TESTS_CLUSTER_TJSON_H
#include <stddef.h>
#include <stdint.h>

/* Is @s exactly one JSON value, surrounded by whitespace only? */
int tjson_valid(const char *s);

/* The value of the first "@key": after @s, as an integer / a string /
 * a boolean. 0 on success, -1 if absent or of another type. Return
 * where the value ends in *@end (NULL ok) to walk arrays of objects. */
int tjson_int(const char *s, const char *key, int64_t *v, const char **end);
int tjson_str(const char *s, const char *key, char *buf, size_t len,
	      const char **end);
int tjson_bool(const char *s, const char *key, int *v, const char **end);

/* Occurrences of @needle in @s. */
size_t tjson_count(const char *s, const char *needle);
#endif
