// The parts of the plan parser (plan.c, plan_words.c, plan_check.c, plan_format.c) and
// what they share. Private to the engine.
#ifndef CCHAOS_FAULTS_PLAN_H
#define CCHAOS_FAULTS_PLAN_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct parser {
    chaos_plan_error *error;
    chaos_plan_error scratch;
    int line;
    bool failed;
} parser;

typedef struct token {
    const char *key; ///< the word, or the part before '='
    size_t key_length;
    char *value;     ///< decoded value after '=' (NULL: no '=')
    const char *raw; ///< the value as written (from its opening quote, if quoted)
    int column;
    int value_column;
    bool used;
} token;

#define MAX_TOKENS 64

typedef struct line_tokens {
    token items[MAX_TOKENS];
    int count;
} line_tokens;

typedef struct builder {
    chaos_plan *plan;
    int32_t entry_capacity;
    int32_t node_capacity; ///< of the last entry
    bool header;
    bool seed_given;
} builder;

// plan_words.c
__attribute__((format(printf, 3, 4))) void plan_fail(parser *p, int column, const char *format, ...);
void plan_free_tokens(line_tokens *t);
bool plan_tokenize(parser *p, const char *line, size_t length, line_tokens *out);
bool plan_word_is(const token *t, const char *word);
const char *plan_nearest(const char *word, size_t length, const char *const *choices, char *buffer, size_t capacity);
const char *plan_join(const char *const *choices, char *buffer, size_t capacity);
bool plan_check_keys(parser *p, line_tokens *t, int first, const char *const *allowed, const char *what);
token *plan_find(line_tokens *t, int first, const char *key);
bool plan_u64(const char *text, uint64_t *out);
bool plan_i64(const char *text, int64_t *out);
bool plan_double(const char *text, double *out);
bool plan_duration(const char *text, int64_t *out);
bool plan_yes_no(const char *text, int32_t *out);
bool plan_set(parser *p, token *t, const char *const *names, const uint32_t *bits, uint32_t any, uint32_t *out,
              const char *what);

char *plan_take(token *t);
bool plan_index(parser *p, token *t, const char *what, int32_t *out);

// plan.c
int32_t plan_default_families(int32_t point);

// plan_node.c
bool plan_parse_node(parser *p, builder *b, line_tokens *t);

// plan_check.c
bool plan_validate_entry(parser *p, cf_entry *entry, int32_t index);

#endif
