//! argon2id runs on a few dedicated threads instead of tokio's blocking pool: each hash takes
//! 19 MiB, and spreading them over hundreds of short-lived blocking threads left the
//! allocator holding hundreds of MiB after a burst of logins. A bounded queue sheds load
//! (503) instead of growing without limit.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use idnode_keys::PasswordHasher;
use tokio::sync::oneshot;

use crate::http::error::{ApiError, ApiResult};

type Job = Box<dyn FnOnce(&PasswordHasher) + Send>;

pub struct HashPool {
    jobs: SyncSender<Job>,
}

impl HashPool {
    /// Starts `threads` workers (startup only) with a queue of `queue` waiting jobs.
    pub fn start(hasher: PasswordHasher, threads: usize, queue: usize) -> std::io::Result<Self> {
        let (jobs, rx) = sync_channel::<Job>(queue);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let hasher = hasher.clone();
            std::thread::Builder::new().name(format!("argon2-{i}")).spawn(move || worker(&rx, &hasher))?;
        }
        Ok(HashPool { jobs })
    }

    async fn run<T: Send + 'static>(&self, f: impl FnOnce(&PasswordHasher) -> T + Send + 'static) -> ApiResult<T> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |h| {
            let _ = tx.send(f(h));
        });
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return Err(ApiError::unavailable("Too many password operations in progress; retry shortly."))
            }
            Err(TrySendError::Disconnected(_)) => return Err(ApiError::internal("password hashing workers stopped")),
        }
        rx.await.map_err(|_| ApiError::internal("password hashing worker dropped a job"))
    }

    pub async fn hash(&self, password: String) -> ApiResult<String> {
        self.run(move |h| h.hash(&password)).await?.map_err(ApiError::internal)
    }

    pub async fn verify(&self, password: String, phc: String) -> ApiResult<bool> {
        self.run(move |h| h.verify(&password, &phc)).await
    }
}

fn worker(rx: &Mutex<Receiver<Job>>, hasher: &PasswordHasher) {
    loop {
        let job = match rx.lock() {
            Ok(guard) => guard.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(hasher),
            Err(_) => return, // the pool was dropped
        }
    }
}

#[cfg(test)]
mod tests {
    use idnode_keys::PasswordParams;

    use super::*;

    #[tokio::test]
    async fn hashes_verifies_and_sheds_load() {
        let hasher = PasswordHasher::new(PasswordParams { memory_kib: 256, iterations: 1, parallelism: 1 }).unwrap();
        let pool = HashPool::start(hasher, 1, 4).unwrap();
        let phc = pool.hash("pw".into()).await.unwrap();
        assert!(pool.verify("pw".into(), phc.clone()).await.unwrap());
        assert!(!pool.verify("other".into(), phc).await.unwrap());
        let slow = PasswordHasher::new(PasswordParams { memory_kib: 8192, iterations: 4, parallelism: 1 }).unwrap();
        let busy = Arc::new(HashPool::start(slow, 1, 1).unwrap());
        let results = futures::future::join_all((0..8).map(|_| {
            let p = busy.clone();
            async move { p.hash("x".into()).await }
        }))
        .await;
        assert!(results.iter().any(|r| r.as_ref().is_err_and(|e| e.status.as_u16() == 503)), "a full queue sheds load");
        assert!(results.iter().any(|r| r.is_ok()));
    }
}
