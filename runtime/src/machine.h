/*
 * machine.h -- the machine interface: the only part of the runtime that knows how PEs are
 * started and how bytes move between them.  The shared-memory backend (shm/) runs one
 * thread per PE; the fiber and communication layers above call nothing else.
 */
#ifndef MPR_MACHINE_H
#define MPR_MACHINE_H

struct mpr_pe;
struct mpr_msgbuf;

/* Starts every PE; each runs mpr_pe_run().  Returns when all PEs have finished. */
int mpr_machine_run(void);
/* Hands a filled buffer to PE dst.  Ownership moves to the receiver. */
void mpr_machine_send(struct mpr_pe *from, int dst, struct mpr_msgbuf *buf);
/* All buffers that arrived at pe, oldest first, or NULL. */
struct mpr_msgbuf *mpr_machine_take(struct mpr_pe *pe);
/* A received buffer has been processed (its records turned into fibers). */
void mpr_machine_processed(struct mpr_pe *pe, struct mpr_msgbuf *buf);
/* The PE found nothing to do: returns true when the whole machine is quiescent. */
int mpr_machine_idle_enter(struct mpr_pe *pe);
/* The PE has work again (a message arrived). */
void mpr_machine_idle_leave(struct mpr_pe *pe);
/* Sleeps until a message may have arrived, the run ended, or timeout_s passed. */
void mpr_machine_sleep(struct mpr_pe *pe, double timeout_s);
/* Wakes every PE (end of run). */
void mpr_machine_wake_all(void);
/* Does pe have unread messages? (cheap, may be stale) */
int mpr_machine_pending(struct mpr_pe *pe);

/* Provided by the PE layer, run by the backend on each PE. */
void mpr_pe_run(struct mpr_pe *pe);

#endif
