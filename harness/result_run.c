/* The lifecycle of a command's result file (result_run.h). */
#include "result_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int orthros_result_run_open(orthros_result_run *r, int argc, char **argv, uint64_t seed, const orthros_backend *be,
                            int tp)
{
    const orthros_result_type *t = r->type;
    void *old = calloc(1, t->size);
    int rc = 0, exists = 0;
    if (!old) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    t->init(old);
    if (strcmp(r->path, "-") && (rc = orthros_result_read_file(t, old, r->path, 1, &exists))) {
        if (!r->force || r->resume) goto done;
        fprintf(stderr, "%s: %s is not a valid result file (%s); --force: it will be replaced\n", r->cmd, r->path,
                orthros_last_error());
        rc = 0;
        exists = 1;
    }
    r->existed = exists;
    cJSON **header = t->header(r->file);
    if (!(*header = orthros_result_new(t->kind, argc, argv, seed, be, tp))) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto done;
    }
    if (exists && r->resume) {
        if ((rc = t->same_config(old, r->path, r->file, "this run")) ||
            (rc = orthros_result_same_code(t->hdr(old), *t->header(old), *header, r->path))) {
            orthros_error(rc, "cannot resume: %s", orthros_last_error());
            goto done;
        }
        rc = orthros_result_keep_cells(t, r->file, old);
    }
done:
    t->free(old);
    free(old);
    return rc;
}

int orthros_result_run_lock(orthros_result_run *r)
{
    int rc = orthros_result_lock_take(&r->lock, r->path, r->wait);
    r->locked = !rc;
    return rc;
}

void orthros_result_run_close(orthros_result_run *r)
{
    if (r->locked) orthros_result_lock_release(&r->lock);
    r->locked = 0;
}

/* --resume, right before a rewrite (under the lock): the cells of the file now at r->path that a resume keeps and
 * r->file lacks are added to it, so that nothing another writer put there since it was read is lost. */
static int merge_disk(orthros_result_run *r)
{
    const orthros_result_type *t = r->type;
    if (!strcmp(r->path, "-")) return 0;
    void *old = calloc(1, t->size);
    int rc, exists = 0;
    if (!old) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    t->init(old);
    if ((rc = orthros_result_read_file(t, old, r->path, 1, &exists))) {
        orthros_error(rc, "%s changed during the run and no longer reads, so it is not rewritten: %s", r->path,
                      orthros_last_error());
    } else if (exists && ((rc = t->same_config(old, r->path, r->file, "this run")) ||
                          (rc = orthros_result_same_code(t->hdr(old), *t->header(old), *t->header(r->file), r->path)))) {
        orthros_error(rc, "%s changed during the run (another writer), so it is not rewritten: %s", r->path,
                      orthros_last_error());
    } else if (exists) {
        rc = orthros_result_keep_cells(t, r->file, old);
    }
    t->free(old);
    free(old);
    return rc;
}

int orthros_result_run_save(orthros_result_run *r, int final)
{
    int rc;
    if (r->resume && (rc = merge_disk(r))) return rc;
    if (r->prepare && (rc = r->prepare(r->file, r->prepare_arg))) return rc;
    if (r->existed && !r->measured && !r->force && !r->resume) {
        if (final) fprintf(stderr, "%s: %s; %s left as it was\n", r->cmd, r->nothing, r->path);
        return 0;
    }
    if (!strcmp(r->path, "-") && !final) return 0; /* stdout gets the file once, at the end */
    if (final) orthros_result_finish(*r->type->header(r->file));
    return orthros_result_write_file(r->type, r->file, r->path);
}
