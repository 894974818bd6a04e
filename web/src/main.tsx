/** The page's entry: mounts the app (web/index.html loads this, the only script). */
import { render } from 'preact';
import { App } from './app.tsx';
import './styles.css';

render(<App />, document.getElementById('app')!);
